"""Published rows → the traced reference profile at the row's per-GPU batch."""

from __future__ import annotations

import pandas as pd
import pytest

from perdollar.predict.references import published_profile_provider


def _row(model: str, precision: str, batch: float, unit: str) -> pd.Series:
    fields = {"model": model, "precision": precision, "per_gpu_batch": batch, "task": "train", "unit": unit}
    return pd.Series(fields)


@pytest.mark.parametrize(
    ("model", "precision", "batch", "unit"),
    [
        # at batch 8, 8 × 384 tokens = 3072 = BERT-base's FFN width: two operator groups merge there
        ("BERT-base SQuAD v1.1 fine-tune", "fp16", 32.0, "sequences/s"),
        ("ResNet-50 v1.5 (NVIDIA DLE)", "amp", 256.0, "images/s"),
    ],
)
def test_a_reference_row_gets_its_traced_profile_at_the_rows_batch(
    model: str, precision: str, batch: float, unit: str
) -> None:
    profile = published_profile_provider()(_row(model, precision, batch, unit))
    assert profile is not None
    assert profile.batch_size == batch and profile.kind == "train"
    flops_per_sample = profile.flops_per_sample
    half = published_profile_provider()(_row(model, precision, batch / 2, unit))
    assert half is not None and half.flops_per_sample == pytest.approx(flops_per_sample, rel=0.02)


def test_a_row_counting_other_units_than_the_reference_gets_no_profile() -> None:
    # GNMT's published tokens/s cannot be turned into the reference's sentences/s
    assert published_profile_provider()(_row("GNMT v2 (WMT16 en-de)", "fp16", 128.0, "tokens/s")) is None
