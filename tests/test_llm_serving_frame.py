"""The deployment rows the LLM serving model offers the selection stage."""

from __future__ import annotations

import math
from pathlib import Path

from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving.frame import llm_serving_frame
from perdollar.workload.llm.architecture import from_hf_config, load_config_file

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"


def _frame(model: str, **slo: float):
    arch = from_hf_config(load_config_file(CONFIGS / f"{model}.json"), name=model)
    return llm_serving_frame(
        arch, catalog_mod.load(), input_tokens=1000, output_tokens=300, rps=20,
        precisions=("fp16", "fp8", "int4"), tensor_parallel_options=(1, 2, 4, 8), **slo,
    )  # fmt: skip


def test_every_row_meets_its_slos_and_its_replicas_carry_the_rate() -> None:
    frame = _frame("llama-3.1-8b", ttft_p99_ms=500, tpot_p99_ms=50)
    p4d = frame[(frame.cloud == "aws") & (frame.instance_type == "p4d.24xlarge")]
    # Eight A100s: TP 1, 2, 4, 8 × three formats, fp8 out for want of units.
    assert len(p4d) == 12
    assert set(p4d[p4d.precision == "fp8"].excluded_reason.str.contains("no fp8")) == {True}
    assert list(p4d[p4d.precision == "fp16"].replicas_per_instance) == [8, 4, 2, 1]
    feasible = frame[frame.feasible]
    assert len(feasible) > 100
    assert (feasible.ttft_p99_ms <= 500 + 1e-6).all() and (feasible.tpot_p99_ms <= 50 + 1e-6).all()
    assert (feasible.replicas * feasible.rate_per_replica >= 20 - 1e-9).all()
    assert (feasible.utilisation <= 0.9 + 1e-9).all()
    assert (
        feasible.instances
        == [math.ceil(r / p) for r, p in zip(feasible.replicas, feasible.replicas_per_instance, strict=True)]
    ).all()


def test_70b_on_80gb_gpus_needs_tensor_parallel_two() -> None:
    frame = _frame("llama-3.1-70b")
    h100 = frame[(frame.accelerator_key == "H100-SXM5-80GB") & (frame.precision == "fp16")]
    single = h100[h100.tensor_parallel == 1]
    assert not single.feasible.any() and single.excluded_reason.str.contains("do not fit").all()
    assert h100[h100.tensor_parallel >= 2].feasible.all()


def test_a_tight_slo_excludes_slow_gpus_with_the_reason() -> None:
    frame = _frame("llama-3.1-8b", ttft_p99_ms=100, tpot_p99_ms=20)
    t4 = frame[(frame.accelerator_key == "T4") & (frame.tensor_parallel == 1) & (frame.precision == "int4")]
    assert not t4.feasible.any() and t4.excluded_reason.str.contains("SLO").all()
