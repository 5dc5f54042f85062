"""The isolation modes: what each step does with the model and the input pipeline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from perdollar.errors import PerdollarError
from perdollar.measure.modes import prepare
from perdollar.workload import Workload


def _inputs(batch_size: int, device: object) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch_size, 8, device=device), torch.randint(0, 2, (batch_size,), device=device)


class _CountingLoader:
    """A finite input pipeline that counts the batches it produced and the epochs started."""

    def __init__(self, batches_per_epoch: int = 3) -> None:
        self.batches_per_epoch = batches_per_epoch
        self.produced = 0
        self.epochs = 0

    def __call__(self, batch_size: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        self.epochs += 1
        for _ in range(self.batches_per_epoch):
            self.produced += 1
            yield _inputs(batch_size, "cpu")


class _CountingModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 2)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.layer(x)


def _workload(loader: _CountingLoader | None, model: _CountingModel) -> Workload:
    return Workload(
        name="counting",
        model_factory=lambda: model,
        input_factory=_inputs,
        batch_size=4,
        data_loader_factory=loader,
    )


def test_full_mode_runs_the_model_on_the_loaders_batches_across_epochs() -> None:
    loader, model = _CountingLoader(), _CountingModel()
    prepared = prepare(_workload(loader, model), "full", "cpu")
    for _ in range(7):
        prepared.step()
    assert model.calls == 7
    assert loader.produced == 7
    assert loader.epochs == 3  # a finite loader restarts, as a new epoch would


def test_data_only_mode_iterates_the_pipeline_without_the_model() -> None:
    loader, model = _CountingLoader(), _CountingModel()
    prepared = prepare(_workload(loader, model), "data-only", "cpu")
    for _ in range(5):
        prepared.step()
    assert loader.produced == 5
    assert model.calls == 0
    assert prepared.runner is None


def test_cached_input_mode_reuses_one_batch() -> None:
    loader, model = _CountingLoader(), _CountingModel()
    prepared = prepare(_workload(loader, model), "cached-input", "cpu")
    for _ in range(4):
        prepared.step()
    assert model.calls == 4
    assert loader.produced == 0


def test_without_a_loader_data_only_times_the_synthetic_input_factory() -> None:
    model = _CountingModel()
    prepared = prepare(_workload(None, model), "data-only", "cpu")
    batch = prepared.step()
    assert isinstance(batch, tuple) and batch[0].shape == (4, 8)
    assert model.calls == 0


def test_unknown_mode_is_a_one_line_error() -> None:
    with pytest.raises(PerdollarError, match="unknown mode"):
        prepare(_workload(None, _CountingModel()), "sideways", "cpu")
