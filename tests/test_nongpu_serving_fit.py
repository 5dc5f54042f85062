"""TPU serving fitted on published JetStream tables: the record matches its rows, TPU replicas are
ranked, and rows resting on another chip's fit say so."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.predict.accelerator_stacks import (
    SERVING_STACKS,
    TRAINING_STACKS,
    decode_step_s,
    fit_decode,
    fit_note,
    ideal_decode_step_s,
)
from perdollar.predict.nongpu_llm import nongpu_serving_rows
from perdollar.workload.llm import load_llm_workload

PUBLISHED = Path(__file__).resolve().parents[1] / "benchmarks" / "published_nongpu_llm.csv"
# The held-out error benchmarks/nongpu_llm_accuracy.py reports for TPU-v5e decode (jetstream): max 80.4%.
JETSTREAM_HELD_OUT_MAX = 0.805


@pytest.fixture(scope="module")
def catalog():
    return catalog_mod.load()


def _jetstream_pairs(catalog) -> list[tuple[float, float]]:
    pairs = []
    for row in csv.DictReader(PUBLISHED.open()):
        if row["stack"] != "jetstream":
            continue
        bandwidth = catalog.accelerator(row["chip"]).memory_bandwidth_gbps
        batch = int(row["batch"])
        ideal = ideal_decode_step_s(
            float(row["params_b"]) * 1e9, int(row["chips"]), bandwidth, batch=batch,
            context=float(row["seq_len"]), kv_bytes_per_token=float(row["kv_bytes_per_token"]),
        )  # fmt: skip
        pairs.append((ideal, batch / float(row["value"])))
    return pairs


def test_jetstream_record_is_the_fit_of_its_published_rows_from_two_sources(catalog):
    stack = SERVING_STACKS["xla"]
    rows = [r for r in csv.DictReader(PUBLISHED.open()) if r["stack"] == "jetstream"]
    assert len({r["source_url"] for r in rows}) >= 2 and stack.fitted
    bandwidth, step = fit_decode(_jetstream_pairs(catalog))
    assert stack.bandwidth == pytest.approx(bandwidth, abs=1e-3)
    assert stack.step_s == pytest.approx(step, abs=1e-5)


def test_fitted_fractions_reproduce_published_steps_within_the_held_out_error(catalog):
    stack = SERVING_STACKS["xla"]
    pairs = _jetstream_pairs(catalog)
    errors = [abs(decode_step_s(stack, ideal) / measured - 1.0) for ideal, measured in pairs]
    assert max(errors) < JETSTREAM_HELD_OUT_MAX
    assert statistics.median(errors) < 0.25  # in-sample: well inside the held-out median of 46.6%


def test_one_row_fit_puts_all_its_time_on_streaming():
    assert fit_decode([(0.01, 0.04)]) == (0.25, 0.0)
    with pytest.raises(ValueError, match="needs a row"):
        fit_decode([])


def test_tpu_replicas_are_ranked_and_other_generations_say_whose_fit_they_use(catalog):
    arch = load_llm_workload("llama-3.1-8b").architecture
    rows = nongpu_serving_rows(
        arch, catalog, input_tokens=1000, output_tokens=300, rps=20.0, ttft_p99_ms=500.0, tpot_p99_ms=50.0,
        precisions=("bf16",),
    )  # fmt: skip
    tpu = rows[rows["accelerator_key"].str.startswith("TPU-v")]
    assert not tpu["excluded_reason"].str.contains("no published serving table").any()
    v5e = tpu[(tpu["accelerator_key"] == "TPU-v5e") & tpu["feasible"]]
    assert not v5e.empty and (v5e["engine"] == "jetstream").all() and (v5e["fit_note"] == "").all()
    v6e = tpu[(tpu["accelerator_key"] == "TPU-v6e") & tpu["feasible"]]
    assert not v6e.empty
    assert v6e["fit_note"].str.contains("TPU-v6e figures rest on JetStream / vLLM-TPU's TPU-v5e fit").all()
    gaudi_stack = SERVING_STACKS["habana"]
    assert "round starting fractions" in fit_note(catalog.accelerator("TPU-v5e"), gaudi_stack)


def test_trainium2_training_rests_on_the_trn1_fit(catalog):
    trn2 = catalog.accelerator("trn2")
    note = fit_note(trn2, TRAINING_STACKS["neuron"])
    assert note == "Trainium2 figures rest on NxD Training (Neuron)'s Trainium fit scaled by the chip's specs"
    assert fit_note(catalog.accelerator("trn1"), TRAINING_STACKS["neuron"]) == ""
    assert "spec-only" in fit_note(trn2, TRAINING_STACKS["habana"])


def test_recommend_json_ranks_a_tpu_deployment_and_says_whose_fit_it_rests_on(tmp_path):
    done = run_perdollar(
        "recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000",
        "--output-tokens", "300", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50", "--cloud", "gcp", "--json",
        "--no-store", env={"PERDOLLAR_HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    deployments = json.loads(done.stdout)["deployments"]
    tpu = [d for d in deployments if str(d["accelerator_key"]).startswith("TPU-")]
    assert tpu and all(d["engine"] == "jetstream" for d in tpu)
    for row in tpu:
        resting = row["accelerator_key"] != "TPU-v5e"
        assert ("fit scaled by the chip's specs" in row["plan_text"]) == resting
