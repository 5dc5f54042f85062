"""NxD Training on Trainium: a compute share and a NeuronLink share fitted on Neuron's published
training tables, each plan's tensor-parallel, pipeline, data-parallel (EFA) and ZeRO-1 terms, and
the stack and its source named in the answer."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

import pytest

from benchmark_scripts import BENCHMARKS, benchmark_module
from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.predict.accelerator_stacks import model_flops_per_token
from perdollar.predict.nongpu_llm import training_row
from perdollar.predict.nxd_trainium import FIT, NxdRun, fit, intensity, nxd_step, predicted_share
from perdollar.workload.llm import load_llm_workload


def _benchmark():
    return benchmark_module("nxd_training_accuracy")


@pytest.fixture(scope="module")
def catalog():
    return catalog_mod.load()


@pytest.fixture(scope="module")
def trainium(catalog):
    return catalog.accelerators["Trainium"]


@pytest.fixture(scope="module")
def runs(trainium):
    return _benchmark().published_runs(BENCHMARKS / "published_nxd_training.csv", trainium)


def _run(**changes) -> NxdRun:
    """Llama 3.1 8B on two trn1.32xlarge at sequence 4096, tensor parallel over 4 chips."""
    base = NxdRun(chips_per_node=16, nodes=2, tensor_parallel=4, pipeline_parallel=1, zero1=True,
                  micro_batch=1, global_batch=256, seq_len=4096, params=8.03e9, layers=32, hidden=4096,
                  network_gbps=800.0)  # fmt: skip
    return replace(base, **changes)


def _share(trainium, run: NxdRun) -> float:
    per_token = model_flops_per_token(run.params, run.layers, run.hidden, run.seq_len)
    step = nxd_step(trainium, run, per_token)
    return (
        run.global_batch
        * run.seq_len
        * per_token
        / run.chips
        / (step.step_s * trainium.peak_bf16_tflops * 1e12)
    )


def test_the_record_is_the_fit_of_neurons_published_rows(trainium, runs):
    assert len({r.source for r in runs}) >= 6 and {r.run.nodes for r in runs} == {16, 32}
    fitted = fit(runs, trainium)
    assert FIT.compute_share == pytest.approx(fitted.compute_share, abs=1e-3)
    assert FIT.link_share == pytest.approx(fitted.link_share, abs=1e-3)
    assert FIT.chip == "Trainium" and FIT.chip_intensity == pytest.approx(intensity(trainium))


@pytest.mark.parametrize("held_by", ["release", "model"])
def test_rows_held_out_are_predicted_within_ten_per_cent_at_the_median(trainium, runs, held_by):
    def key(r):
        return r.source if held_by == "release" else r.model

    errors = []
    for group in {key(r) for r in runs}:
        fitted = fit([r for r in runs if key(r) != group], trainium)
        errors += [
            abs(predicted_share(fitted, r, trainium) / r.achieved - 1.0) for r in runs if key(r) == group
        ]
    assert statistics.median(errors) <= 0.10


def test_each_plan_term_moves_the_share_as_the_plan_does(trainium):
    two_nodes = _share(trainium, _run())
    # Wider tensor parallelism moves more activations over NeuronLink for the same work.
    assert _share(trainium, _run(tensor_parallel=16)) < two_nodes - 0.03
    # On one instance the gradient ring stays on NeuronLink; across two it crosses EFA.
    per_token = model_flops_per_token(8.03e9, 32, 4096, 4096)
    one = nxd_step(trainium, _run(nodes=1), per_token)
    two = nxd_step(trainium, _run(), per_token)
    assert two.data_parallel_s > 4 * one.data_parallel_s > 0
    slower_network = nxd_step(trainium, _run(network_gbps=100.0), per_token)
    assert slower_network.data_parallel_s == pytest.approx(8 * two.data_parallel_s)
    # Pipeline stages idle in the bubble; ZeRO-1 splits the AdamW update over the data-parallel ranks.
    staged = nxd_step(trainium, _run(pipeline_parallel=4, global_batch=64), per_token)
    flat = nxd_step(trainium, _run(global_batch=64), per_token)
    assert staged.compute_s / flat.compute_s == pytest.approx(1 + 3 / 32)  # 3 stages idle, 32 micro-batches
    assert nxd_step(trainium, _run(zero1=False), per_token).optimizer_s == pytest.approx(8 * two.optimizer_s)


def test_predict_names_nxd_training_and_its_efficiency_source(trainium):
    done = run_perdollar(
        "predict", "llama-3.1-8b", "--instance", "trn1.32xlarge", "--seq-len", "4096", "--json"
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["stack"].startswith("NxD Training (Neuron) on Trainium")
    assert "Neuron's trn1 training performance tables (training_data_decoder.csv" in answer["stack"]
    assert f"compute {FIT.compute_share:.1%} of bf16 peak" in answer["stack"]
    plan = answer["plan"]
    run = _run(nodes=1, tensor_parallel=plan["tensor_parallel"])
    # The answer counts the model's exact parameters; the run here, the rounded 8.03e9.
    assert answer["mfu"] == pytest.approx(_share(trainium, run), rel=1e-3)
    assert answer["mfu"] != pytest.approx(0.264, abs=0.01)  # no longer one share for every plan
    two = json.loads(run_perdollar("predict", "llama-3.1-8b", "--instance", "trn1.32xlarge", "--nodes", "2",
                                   "--seq-len", "4096", "--json").stdout)  # fmt: skip
    assert two["mfu"] < answer["mfu"]


def test_trainium2_says_it_has_no_table_of_its_own_and_is_scaled_from_trainium(catalog):
    trn1 = next(v for v in catalog.instance_types.values() if v.name == "trn1.32xlarge")
    trn2 = replace(trn1, name="trn2.48xlarge", accelerator_name="Trainium2", accelerator_key="Trainium2",
                   accelerator_memory_gib_total=16 * 96.0, network_gbps=3200.0)  # fmt: skip
    workload = load_llm_workload("llama-3.1-8b", seq_len=4096)
    row = training_row(trn2, catalog.accelerators["Trainium2"], workload, 1)
    assert row["fits"], row["fit_reason"]
    assert "no NxD Training table for Trainium2: scaled from Trainium by peak and bandwidth" in row["stack"]
    first = training_row(trn1, catalog.accelerators["Trainium"], workload, 1)
    assert row["tokens_per_second"] > 2.5 * first["tokens_per_second"]
