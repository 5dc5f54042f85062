"""Trainium, Inferentia and TPU through their own stacks: reasons, shapes, aliases, prices, ranking."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.catalog.price_outliers import PRICE_OUTLIER_FLAG
from perdollar.predict.accelerator_stacks import SERVING_DEGREES, TRAINING_STACKS, slice_problem
from perdollar.predict.llm.frame import llm_prediction_frame
from perdollar.predict.nongpu_llm import best_training_plan, serving_stack_problem, training_stack_problem
from perdollar.workload.llm import load_llm_workload


@pytest.fixture(scope="module")
def catalog():
    return catalog_mod.load()


@pytest.fixture(scope="module")
def llama_8b():
    return load_llm_workload("llama-3.1-8b")


def test_unsupported_model_chip_and_format_are_excluded_with_their_reason(catalog, llama_8b):
    trainium, inferentia2 = catalog.accelerator("Trainium"), catalog.accelerator("Inferentia2")
    gpt2 = replace(llama_8b, architecture=replace(llama_8b.architecture, model_type="gpt2"))
    assert "has no gpt2 model" in training_stack_problem(trainium, gpt2)
    assert "does not run on Inferentia2" in training_stack_problem(inferentia2, llama_8b)
    assert training_stack_problem(trainium, llama_8b) == ""
    assert "fp8 weights only on Trainium2" in serving_stack_problem(inferentia2, llama_8b.architecture, "fp8")
    assert serving_stack_problem(inferentia2, llama_8b.architecture, "fp16") == ""
    assert "serves no int4" in serving_stack_problem(inferentia2, llama_8b.architecture, "int4")


def test_tpu_slice_shapes_and_neuronlink_degrees_bound_the_plans(catalog, llama_8b):
    v5e, v5p, trainium = (catalog.accelerator(k) for k in ("TPU-v5e", "TPU-v5p", "Trainium"))
    assert slice_problem(v5e, 8) == "" and "slice shape" in slice_problem(v5e, 12)
    assert "slice shape" in slice_problem(v5p, 6)
    plan, _, problem = best_training_plan(
        load_llm_workload("llama-3.1-70b").architecture, trainium, TRAINING_STACKS["neuron"],
        chips_per_node=16, nodes=8, seq_len=4096, global_batch=1024,
    )  # fmt: skip
    assert (
        problem == ""
        and plan is not None
        and plan.tensor_parallel in TRAINING_STACKS["neuron"].tensor_parallel
    )
    assert plan.tensor_parallel > 1  # 70B: its bf16 weights and gradients alone are 17 GiB a chip at TP16
    frame = llm_prediction_frame(llama_8b, catalog, (1, 2), keep=False)
    chips = {key: chip.software_stack for key, chip in catalog.accelerators.items()}
    stacks = frame["accelerator_key"].map(chips)
    own = frame[stacks.isin(["neuron", "xla"]) & frame["fits"].astype(bool)]
    assert not own.empty
    for row in own.itertuples():
        allowed = TRAINING_STACKS[catalog.accelerators[row.accelerator_key].software_stack].tensor_parallel
        assert row.plan.tensor_parallel in allowed
        assert slice_problem(catalog.accelerators[row.accelerator_key], int(row.accelerators_per_node)) == ""
    assert SERVING_DEGREES["Inferentia2"] == (1, 2, 4, 6, 12)


@pytest.mark.parametrize(
    ("typed", "key"),
    [
        ("v5p", "TPU-v5p"),
        ("trn2", "Trainium2"),
        ("inf2", "Inferentia2"),
        ("trillium", "TPU-v6e"),
        ("v6e", "TPU-v6e"),
    ],
)
def test_aliases_as_users_type_them(catalog, typed, key):
    assert catalog.accelerator(typed).key == key


def test_placeholder_tpu_spot_prices_are_flagged(catalog):
    offers = catalog.offers_frame()
    placeholder = offers[
        offers["instance_type"].str.startswith("tpu-v6e")
        & (offers["region"] == "southamerica-west1")
        & (offers["market"] == "spot")
    ]
    assert len(placeholder) >= 4 and (placeholder["price_per_hour"] == 700).all()
    assert placeholder["flags"].map(lambda flags: PRICE_OUTLIER_FLAG in flags).all()


def test_recommend_ranks_trainium_beside_gpus_and_says_why_inferentia_cannot_train():
    done = run_perdollar(
        "recommend", "llama-3.1-8b", "--tokens", "2e10", "--cloud", "aws", "--top", "60", "--show-excluded"
    )
    assert done.returncode == 0, done.stderr
    ranked = done.stdout.split("Excluded")[0]
    assert "trn1.32xlarge" in ranked and "p5.48xlarge" in ranked
    assert "NxD Training (Neuron) does not run on Inferentia" in done.stdout
