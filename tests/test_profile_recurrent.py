"""LSTM and GRU layers are traced as the fused layers cuDNN runs, whatever the tracing CPU supports."""

from __future__ import annotations

from functools import partial

import pytest
import torch
from torch import nn

from perdollar.profile import profile_workload
from perdollar.profile.model import Profile
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


def test_the_recurrent_weights_are_still_trained():
    profile = _profile(nn.LSTM, 10, "amp-fp16")
    lstm_parameters = sum(p.numel() for p in nn.LSTM(64, 96, num_layers=2, bidirectional=True).parameters())
    optimizer_bytes = sum(op.bytes_read for op in profile.operators if op.phase == "optimizer")
    all_parameters = lstm_parameters + 500 * 64 + 192 * 10 + 10
    assert optimizer_bytes >= 4 * all_parameters  # every fp32 weight is read by the optimizer step
