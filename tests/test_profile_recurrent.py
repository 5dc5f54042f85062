"""LSTM and GRU layers are traced as the fused layers cuDNN runs, whatever the tracing CPU supports."""

from __future__ import annotations

import contextlib
from functools import partial

import pytest
import torch
from torch import nn

from perdollar.profile import profile_workload
from perdollar.profile.model import Profile
from perdollar.profile.recurrent import fuse_recurrent_layers
from perdollar.workload import Workload


class _Tagger(nn.Module):
    """Embedding → a two-layer bidirectional recurrent layer → per-token classifier."""

    def __init__(self, cell: type[nn.RNNBase]) -> None:
        super().__init__()
        self.embed = nn.Embedding(500, 64)
        self.rnn = cell(64, 96, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(192, 10)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(self.embed(tokens))
        return self.head(hidden)


def _inputs(batch: int, device: object, *, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randint(0, 500, (batch, seq_len), device=device), torch.randint(
        0, 10, (batch, seq_len), device=device
    )


def _loss(outputs: torch.Tensor, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    return nn.functional.cross_entropy(outputs.flatten(0, 1).float(), batch[-1].flatten())


def _profile(cell: type[nn.RNNBase], seq_len: int, precision: str, kind: str = "train") -> Profile:
    return profile_workload(
        Workload(
            name=f"tagger-{cell.__name__}-{seq_len}-{precision}-{kind}",
            model_factory=partial(_Tagger, cell),
            input_factory=partial(_inputs, seq_len=seq_len),
            batch_size=8,
            loss_fn=_loss,
            precision=precision,
            kind=kind,  # type: ignore[arg-type]
        )
    )


def _calls(profile: Profile) -> int:
    return sum(op.count for op in profile.operators)


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("precision", ["fp32", "amp-fp16"])
def test_one_record_per_layer_and_direction_however_long_the_sequence(cell: type[nn.RNNBase], precision: str):
    short, long = _profile(cell, 10, precision), _profile(cell, 40, precision)
    assert _calls(short) == _calls(long)  # nothing is unrolled per time step
    recurrent = [op for op in short.operators if op.op_class == "recurrent"]
    assert sum(op.count for op in recurrent if op.phase == "forward") == 4  # 2 layers × 2 directions
    assert sum(op.count for op in recurrent if op.phase == "backward") == 4
    if precision == "amp-fp16":
        assert {op.dtype for op in recurrent} == {"fp16"}


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_recurrent_flops_are_the_gate_gemms_of_every_token(cell: type[nn.RNNBase]):
    gates = 4 if cell is nn.LSTM else 3
    tokens, hidden = 8 * 40, 96
    # layer 0 reads 64 inputs, layer 1 the 192 of both directions; each also reads its own 96
    gemm = 2 * tokens * gates * hidden * ((64 + hidden) + (192 + hidden)) * 2  # × 2 directions
    forward = sum(
        op.flops
        for op in _profile(cell, 40, "fp32").operators
        if op.op_class == "recurrent" and op.phase == "forward"
    )
    assert forward == pytest.approx(gemm, rel=0.05)
    inference = _profile(cell, 40, "fp32", kind="inference")
    assert not any(op.phase == "backward" for op in inference.operators)


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_a_fused_layer_returns_what_the_module_returns_and_trains_every_weight(cell: type[nn.RNNBase]):
    torch.manual_seed(0)
    module = cell(16, 24, num_layers=2, batch_first=True, bidirectional=True)
    records: list[tuple[str, tuple[int, ...]]] = []
    fuse_recurrent_layers(
        module,
        lambda func, args, kwargs, out: records.append((str(func), tuple(args[0].shape))),
        contextlib.nullcontext,
    )
    inputs = torch.randn(3, 5, 16, requires_grad=True)
    output, final = module(inputs)
    expected_output, expected_final = cell.forward(module, inputs)
    assert output.shape == expected_output.shape == (3, 5, 48)
    finals = final if isinstance(final, tuple) else (final,)
    expected = expected_final if isinstance(expected_final, tuple) else (expected_final,)
    assert [t.shape for t in finals] == [t.shape for t in expected]
    output.sum().backward()
    assert inputs.grad is not None and inputs.grad.shape == inputs.shape
    assert all(p.grad is not None and p.grad.shape == p.shape for p in module.parameters())
    # layer 0 reads the 16 inputs, layer 1 both directions' 24: one record each way per direction
    assert sorted(records) == sorted(
        [("aten.mkldnn_rnn_layer.default", (15, 16))] * 2
        + [("aten.mkldnn_rnn_layer.default", (15, 48))] * 2
        + [("aten.mkldnn_rnn_layer_backward.default", (15, 16))] * 2
        + [("aten.mkldnn_rnn_layer_backward.default", (15, 48))] * 2
    )
