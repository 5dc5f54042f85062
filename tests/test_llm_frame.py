"""The catalog-wide frame the ranking reads: every instance × node count with its best plan."""

from __future__ import annotations

import math

import pytest

from perdollar import catalog
from perdollar.predict.frame import PREDICTION_COLUMNS
from perdollar.predict.llm import parse_plan
from perdollar.predict.llm.frame import llm_prediction_frame
from perdollar.workload.llm import load_llm_workload


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


@pytest.fixture(scope="module")
def frame_70b(cat):
    return llm_prediction_frame(load_llm_workload("llama-3.1-70b", global_batch=512), cat, (1, 2, 4))


def test_rows_carry_the_prediction_columns(cat, frame_70b) -> None:
    assert set(PREDICTION_COLUMNS) <= set(frame_70b.columns)
    assert len(frame_70b) == 3 * len(cat.instance_types)
    fitting = frame_70b[frame_70b["fits"]]
    assert (fitting["samples_per_second"] == fitting["tokens_per_second"]).all()
    seq = 2048
    assert fitting["tokens_per_second"].to_numpy() == pytest.approx(
        fitting["sequences_per_second"].to_numpy() * seq
    )


def test_70b_never_proposes_a_plan_that_does_not_fit(cat, frame_70b) -> None:
    fitting = frame_70b[frame_70b["fits"]]
    assert len(fitting) > 0
    for row in fitting.itertuples():
        device = cat.accelerators[row.accelerator_key].memory_gib
        # Past the estimate's 10% reserve a plan is tight (and says so), never past 95% of the device.
        assert row.memory_per_gpu_gib <= 0.95 * device + 1e-9
        assert (row.memory_per_gpu_gib > 0.9 * device) == row.fit_reason.startswith("tight: ")
    multi_node = fitting[fitting["nodes"] > 1]
    strategies = {(p.strategy, p.tensor_parallel > 1) for p in multi_node["plan"]}
    assert any(s in ("fsdp", "hsdp") for s, _ in strategies) and any(tp for _, tp in strategies)
    assert (multi_node["communication_time_s"] > 0).any()


def test_rows_that_cannot_run_say_why(frame_70b) -> None:
    one_small_gpu = frame_70b[(frame_70b["instance_type"] == "g5.2xlarge") & (frame_70b["nodes"] == 1)].iloc[
        0
    ]
    assert not one_small_gpu["fits"]
    assert one_small_gpu["fit_reason"].startswith("needs ") and "has 21.6 GiB" in one_small_gpu["fit_reason"]
    cpu = frame_70b[(frame_70b["instance_type"] == "c5.large")]
    if len(cpu):
        assert cpu.iloc[0]["excluded_reason"] and math.isnan(cpu.iloc[0]["samples_per_second"])


def test_a_fixed_plan_is_kept_or_the_row_says_why(cat) -> None:
    workload = load_llm_workload("gpt-125m", global_batch=64)
    frame = llm_prediction_frame(workload, cat, (1,), plan=parse_plan("fsdp,tp4,mb2"))
    p4d = frame[frame["instance_type"] == "p4d.24xlarge"].iloc[0]
    assert p4d["fits"] and p4d["plan"].strategy == "fsdp" and p4d["plan"].tensor_parallel == 4
    single = frame[frame["instance_type"] == "g5.2xlarge"].iloc[0]
    assert not single["fits"] and "tensor parallel 4" in single["fit_reason"]
