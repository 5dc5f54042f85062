"""A language model measured with `bench` (its config built with random weights) and its runs
calibrating predictions of the same model: the factor algebra, and the command line end to end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.catalog import load as load_catalog
from perdollar.measure.result import HostFingerprint, Measurement, Rate
from perdollar.predict.llm import TrainingPlan, predict_llm_training
from perdollar.predict.llm.measured import calibrated
from perdollar.store import open_store
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.trainable import measurement_key

TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 256,
    "max_position_embeddings": 128,
}


def _host(accelerator_key: str | None) -> HostFingerprint:
    return HostFingerprint("cpu", 16, 128.0, accelerator_key, accelerator_key, 8 if accelerator_key else 0,
                           None, "unknown", None)  # fmt: skip


def _run(tokens_per_second: float, accelerator_key: str | None) -> Measurement:
    workload = load_llm_workload("llama-3.1-8b")
    return Measurement(
        status="ok", mode="full", workload_name=workload.name, workload_fingerprint=measurement_key(workload),
        batch_size=2, precision="amp-bf16", host=_host(accelerator_key), started_at="2026-01-01T00:00:00Z",
        samples_per_second=Rate(1.0, 0.9, 1.1, 1), nproc=8,
        extra={"tokens_per_second": tokens_per_second, "sharding": "FULL_SHARD"},
    )  # fmt: skip


def _predicted_h100(**efficiency: object) -> float:
    workload = load_llm_workload("llama-3.1-8b")
    catalog = load_catalog()
    plan = TrainingPlan(strategy="fsdp", micro_batch=2)
    return predict_llm_training(
        workload.architecture, catalog.accelerator("H100-SXM5-80GB"), gpus_per_node=8, nodes=1, plan=plan,
        seq_len=workload.seq_len, global_batch=16, precision="amp-bf16", **efficiency,  # type: ignore[arg-type]
    ).tokens_per_second  # fmt: skip


def test_a_run_at_half_the_predicted_rate_halves_every_prediction() -> None:
    workload = load_llm_workload("llama-3.1-8b")
    shipped = _predicted_h100()
    found = calibrated(workload, [_run(0.5 * shipped, "H100-SXM5-80GB")], load_catalog())
    assert found.runs == 1 and found.efficiency.basis == "calibrated"
    assert found.efficiency.calibration_factor == pytest.approx(0.5, rel=1e-6)
    assert "H100-SXM5-80GB" in found.note and "0.50" in found.note
    assert _predicted_h100(efficiency=found.efficiency) == pytest.approx(0.5 * shipped, rel=1e-6)


def test_cpu_runs_and_failed_runs_do_not_calibrate_a_gpu_prediction() -> None:
    workload = load_llm_workload("llama-3.1-8b")
    failed = dataclasses.replace(_run(1e9, "H100-SXM5-80GB"), status="error")
    found = calibrated(workload, [_run(1e3, None), failed], load_catalog())
    assert found.runs == 0 and found.note == "" and found.efficiency.calibration_factor == 1.0


def test_bench_of_a_config_runs_fsdp_on_cpu_and_predict_reads_its_gpu_runs(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY), encoding="utf-8")
    store = tmp_path / "store.db"
    bench = run_perdollar("bench", str(config), "--nproc", "2", "--plan", "fsdp", "--duration", "2s",
                          "--json", store=store, cwd=tmp_path)  # fmt: skip
    assert bench.returncode == 0, bench.stderr[-2000:]
    workload = load_llm_workload(str(config))
    with open_store(f"sqlite:///{store}") as opened:
        runs = opened.measurements_for(measurement_key(workload))
    assert len(runs) == 1 and runs[0].nproc == 2 and runs[0].extra["sharding"] == "FULL_SHARD"
    assert runs[0].extra["tokens_per_second"] == pytest.approx(runs[0].samples_per_second.median * 128)

    question = ("predict", str(config), "--instance", "p5.48xlarge", "--plan", "fsdp,mb2", "--json")
    before = json.loads(run_perdollar(*question, store=store, cwd=tmp_path).stdout)
    assert before["calibration"] == "" and before["basis"] == "spec"  # a CPU run says nothing of an H100

    # The same run as if made on an H100 host (a GPU run of this model on a machine we do not have).
    on_gpu = dataclasses.replace(runs[0], host=_host("H100-SXM5-80GB"),
                                 extra={**runs[0].extra, "tokens_per_second": 1234.0})  # fmt: skip
    with open_store(f"sqlite:///{store}") as opened:
        opened.save_measurement(on_gpu)
    after = json.loads(run_perdollar(*question, store=store, cwd=tmp_path).stdout)
    assert after["basis"] == "calibrated" and "calibrated on 1 bench run" in after["calibration"]
    assert after["tokens_per_second"] != pytest.approx(before["tokens_per_second"])
