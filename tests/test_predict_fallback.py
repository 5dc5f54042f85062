"""The fallback descriptor of a model perdollar never fitted: borrowed from models measured alike."""

from __future__ import annotations

import math

import pytest

from perdollar.predict.lab.fallback import DEFAULT_DESCRIPTOR, descriptor_for, family_key


def _descriptor(bytes_per_flop: float, launches: float) -> dict[str, float]:
    return {"log_bytes_per_flop": math.log(bytes_per_flop), "log_launches": math.log(launches)}


FITTED = {
    family_key("GPT-2 Large", "train", "ms per iteration"): _descriptor(0.01, 4.0),
    family_key("GPT-3 2.7B", "train", "ms per iteration"): _descriptor(0.02, 2.0),
    family_key("BERT-large fine-tune", "train", "sequences/s"): _descriptor(0.05, 300.0),
    family_key("GNMT v2", "train", "tokens/s"): _descriptor(0.03, 300.0),
    family_key("ResNeXt101", "train", "images/s"): _descriptor(0.06, 200.0),
}


def test_a_fitted_model_keeps_its_own_descriptor() -> None:
    key = family_key("GNMT v2", "train", "tokens/s")
    assert descriptor_for(key, FITTED) == FITTED[key]


def test_an_unknown_model_borrows_from_its_group_measured_in_the_same_unit() -> None:
    # OPT is a transformer like BERT and GNMT, but only the GPT rows were timed per iteration.
    got = descriptor_for(family_key("OPT-1.3B", "train", "ms per iteration"), FITTED)
    assert math.exp(got["log_bytes_per_flop"]) == pytest.approx(math.sqrt(0.01 * 0.02))
    assert math.exp(got["log_launches"]) == pytest.approx(math.sqrt(4.0 * 2.0))


def test_without_a_model_in_its_unit_it_borrows_from_its_whole_group() -> None:
    got = descriptor_for(family_key("T5 base", "train", "samples/s"), FITTED)
    # median of the four transformer descriptors: between the 2nd and 3rd of each, in log space
    assert math.exp(got["log_bytes_per_flop"]) == pytest.approx(math.sqrt(0.02 * 0.03))
    assert math.exp(got["log_launches"]) == pytest.approx(math.sqrt(4.0 * 300.0))


def test_a_model_of_no_fitted_group_and_task_gets_the_default() -> None:
    assert descriptor_for(family_key("Tacotron 2", "inference", "mel frames/s"), FITTED) == DEFAULT_DESCRIPTOR
