"""A CPU measurement of an fp16 workload says that fp16 is emulated there."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from perdollar.measure.worker import _precision_warnings


def _prepared(precision: str) -> SimpleNamespace:
    return SimpleNamespace(runner=SimpleNamespace(workload=SimpleNamespace(precision=precision)))


@pytest.mark.parametrize("precision", ["amp-fp16", "fp16"])
def test_fp16_on_cpu_is_flagged_with_the_fix(precision: str) -> None:
    (warning,) = _precision_warnings(_prepared(precision), {}, "cpu")
    assert "emulated" in warning and "--precision fp32" in warning


@pytest.mark.parametrize(
    ("precision", "device"), [("fp32", "cpu"), ("amp-bf16", "cpu"), ("amp-fp16", "cuda")]
)
def test_other_precisions_and_accelerators_are_not_flagged(precision: str, device: str) -> None:
    assert _precision_warnings(_prepared(precision), {}, device) == []


def test_the_requested_precision_counts_when_no_model_was_built() -> None:
    assert _precision_warnings(SimpleNamespace(runner=None), {"precision": "fp16"}, "cpu")
