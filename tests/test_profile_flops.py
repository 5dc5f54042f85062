"""The profiler's FLOP counts against counts worked out by hand, and against published figures."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch
from torch import nn

from perdollar.profile import profile_workload
from perdollar.profile.model import Profile
from perdollar.profile.summary import forward_flops_per_sample
from perdollar.workload import Workload, load_workload
from perdollar.workload.references import hf, inputs


def _flops(profile: Profile, *, phase: str | None = None, classes: tuple[str, ...] = ()) -> float:
    return sum(
        op.flops
        for op in profile.operators
        if (phase is None or op.phase == phase) and (not classes or op.op_class in classes)
    )


def _workload(model_factory, input_factory, batch: int, kind: str = "inference", **extra) -> Workload:
    return Workload(
        name=f"test-{model_factory.__name__}",
        model_factory=model_factory,
        input_factory=input_factory,
        batch_size=batch,
        kind=kind,  # type: ignore[arg-type]
        loss_fn=inputs.cross_entropy,
        **extra,
    )


def _linear_model() -> nn.Module:
    return nn.Linear(256, 512)


def test_linear_forward_and_backward_match_hand_counts() -> None:
    batch, width_in, width_out = 32, 256, 512
    make = partial(inputs.features, width=width_in, classes=width_out)
    forward = profile_workload(_workload(_linear_model, make, batch))
    gemm = 2 * batch * width_in * width_out  # one multiply-add per (sample, input, output)
    assert _flops(forward, classes=("matmul",)) == gemm
    (record,) = [op for op in forward.operators if op.op_class == "matmul"]
    assert record.gemm_mnk == (batch, width_out, width_in)
    # fp32 operands: input, weight and bias read; output written (4 bytes each).
    assert record.bytes_read == 4 * (batch * width_in + width_in * width_out + width_out)
    assert record.bytes_written == 4 * batch * width_out

    train = profile_workload(_workload(_linear_model, make, batch, kind="train", optimizer="sgd"))
    assert _flops(train, phase="forward", classes=("matmul",)) == gemm
    # The input needs no gradient, so backward is the weight gradient alone: one more GEMM.
    assert _flops(train, phase="backward", classes=("matmul",)) == gemm
    assert train.params == width_in * width_out + width_out


def _conv_model() -> nn.Module:
    return nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.Flatten(), nn.Linear(32 * 28 * 28, 10))


def _conv_inputs(batch: int, device: object) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, 16, 28, 28, device=device), torch.randint(0, 10, (batch,), device=device)


def test_conv2d_matches_hand_count() -> None:
    batch = 8
    profile = profile_workload(_workload(_conv_model, _conv_inputs, batch))
    conv_flops = 2 * batch * 32 * 28 * 28 * 16 * 3 * 3  # per output pixel and channel: Cin·k·k MACs
    assert _flops(profile, classes=("conv",)) == conv_flops
    (record,) = [op for op in profile.operators if op.op_class == "conv"]
    assert record.gemm_mnk == (batch * 28 * 28, 32, 16 * 9)
    assert _flops(profile, classes=("matmul",)) == 2 * batch * 32 * 28 * 28 * 10


class AttentionBlock(nn.Module):
    def __init__(self, width: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, width = x.shape
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        mixed = nn.functional.scaled_dot_product_attention(q, k, v)
        y = self.out(mixed.transpose(1, 2).reshape(batch, seq, width))
        return self.head(y.mean(dim=1))


def _attention_inputs(batch: int, device: object, seq: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch, seq, 64, device=device), torch.randint(0, 10, (batch,), device=device)


def test_attention_block_matches_hand_count() -> None:
    batch, seq, width = 2, 32, 64
    profile = profile_workload(_workload(AttentionBlock, _attention_inputs, batch))
    projections = 2 * batch * seq * width * (3 * width) + 2 * batch * seq * width * width
    scores_and_mix = 2 * (2 * batch * seq * seq * width)  # QKᵀ and softmax(QKᵀ)V over all heads
    head = 2 * batch * width * 10
    assert _flops(profile, classes=("attention",)) == scores_and_mix
    assert _flops(profile, classes=("matmul",)) == projections + head

    train = profile_workload(
        _workload(AttentionBlock, _attention_inputs, batch, kind="train", optimizer="adam")
    )
    qkv = 2 * batch * seq * width * (3 * width)
    # Backward: the qkv projection's input is the batch (no gradient), so only its weight gradient;
    # every later layer computes both the weight and the input gradient.
    assert _flops(train, phase="backward", classes=("matmul",)) == qkv + 2 * (projections - qkv) + 2 * head
    # Fused attention backward recomputes the scores: between 2× and 2.5× its forward.
    attention_backward = _flops(train, phase="backward", classes=("attention",))
    assert 2 * scores_and_mix <= attention_backward <= 2.5 * scores_and_mix


def test_inference_profiles_the_forward_pass_only() -> None:
    profile = profile_workload(load_workload("mlp", kind="inference"))
    assert {op.phase for op in profile.operators} == {"forward"}
    assert (
        profile.memory.gradients == 0 and profile.memory.optimizer_state == 0 and profile.gradient_bytes == 0
    )


def _odd_model() -> nn.Module:
    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cumprod(self.linear(x), dim=1)

    return Odd()


def test_unknown_operators_are_listed_and_counted() -> None:
    profile = profile_workload(_workload(_odd_model, partial(inputs.features, width=256, classes=10), 8))
    assert "aten.cumprod" in profile.unclassified_ops
    (record,) = [op for op in profile.operators if op.name == "aten.cumprod"]
    assert record.op_class == "unclassified" and record.bytes_moved == 2 * 8 * 10 * 4 and record.flops > 0


def test_autocast_halves_matmul_operands_and_keeps_fp32_master_weights() -> None:
    fp32 = profile_workload(load_workload("mlp", precision="fp32"))
    amp = profile_workload(load_workload("mlp", precision="amp-bf16"))
    pure = profile_workload(load_workload("mlp", precision="bf16"))

    def matmul_bytes(profile: Profile) -> float:
        return sum(op.bytes_moved for op in profile.operators if op.op_class == "matmul")

    assert {op.dtype for op in amp.operators if op.op_class == "matmul"} == {"bf16"}
    assert matmul_bytes(amp) == pytest.approx(matmul_bytes(fp32) / 2, rel=0.01)
    assert amp.memory.weights == fp32.memory.weights  # master weights stay fp32 under autocast
    assert pure.memory.weights == pytest.approx(fp32.memory.weights / 2)
    assert {op.dtype for op in fp32.operators if op.op_class == "matmul"} == {"fp32"}
    tf32 = profile_workload(load_workload("mlp", precision="tf32"))
    assert {op.dtype for op in tf32.operators if op.op_class == "matmul"} == {"tf32"}


def test_profiles_are_cached_per_fingerprint() -> None:
    workload = load_workload("mlp", batch_size=7)
    assert profile_workload(workload) is profile_workload(load_workload("mlp", batch_size=7))


# Published forward counts (multiply-adds per sample): ViT-B/16 at 224² 17.6 G (Dosovitskiy et al.,
# as counted by fvcore), ResNet-50 4.1 G (He et al.), BERT-base encoder at sequence 128 11.2 G.
@pytest.mark.parametrize(("name", "gmacs"), [("vit-b16", 17.6), ("resnet50", 4.1)])
def test_reference_forward_flops_match_published_counts(name: str, gmacs: float) -> None:
    profile = profile_workload(load_workload(name, batch_size=2))
    assert forward_flops_per_sample(profile) / 2e9 == pytest.approx(gmacs, rel=0.03)
    assert profile.flops_per_sample / forward_flops_per_sample(profile) == pytest.approx(3.0, rel=0.03)


def test_bert_base_encoder_forward_flops() -> None:
    seq_len = 128

    def encoder_inputs(batch: int, device: object) -> dict[str, torch.Tensor]:
        return {"input_ids": torch.randint(0, 30522, (batch, seq_len), device=device)}

    workload = Workload(
        name="bert-base-encoder",
        model_factory=partial(hf.bert_encoder, "base"),
        input_factory=encoder_inputs,
        batch_size=1,
        kind="inference",
    )
    profile = profile_workload(workload)
    assert profile.flops_per_sample / 2e9 == pytest.approx(11.2, rel=0.03)
    assert not math.isnan(profile.arithmetic_intensity)
