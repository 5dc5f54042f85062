"""What a chip's stack, an engine or a framework cannot honour is refused in one line, never replaced."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.ask.language_model_serving_prediction import predict_language_model_serving
from perdollar.errors import PerdollarError
from perdollar.predict.accelerator_stacks import SERVING_STACKS
from perdollar.predict.llm_serving.engines import ENGINES
from perdollar.predict.llm_serving.features import speculation
from perdollar.predict.nongpu_llm import nongpu_serving_rows
from perdollar.workload.llm import load_llm_workload

# One chip of each software stack the catalog holds, at the smallest replica its stack takes.
CHIPS = {"H100-SXM5-80GB": 1, "MI300X": 1, "Inferentia2": 1, "Trainium": 1, "TPU-v5e": 1,
         "Qualcomm-Cloud-AI100": 1}  # fmt: skip
SERVING = ("--inference", "--input-tokens", "1000", "--output-tokens", "300", "--no-store")


@pytest.fixture(scope="module")
def catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


def _served(engine: str, chip: str, **asked: object):  # type: ignore[no-untyped-def]
    return predict_language_model_serving(
        "llama-3.2-1b", accelerator=chip, gpus=CHIPS.get(chip, 1), tensor_parallel=None, pipeline_parallel=1,
        input_tokens=1000, output_tokens=300, precision="bf16", batch=None, engine=engine, **asked,
    )  # fmt: skip


def _named_engines(message: str, chip: str) -> list[str]:
    """The engines a refusal names for ``chip`` (a stack's label in brackets left out)."""
    listed = message.split(f"engines for {chip}: ", 1)[1].split(" (", 1)[0].split(" — ", 1)[0]
    return [] if listed.startswith("none") else [name.strip() for name in listed.split(",")]


@pytest.mark.parametrize("chip", list(CHIPS))
@pytest.mark.parametrize("engine", [*ENGINES, *(stack.name for stack in SERVING_STACKS.values())])
def test_an_engine_is_predicted_as_itself_or_refused_naming_the_chips_engines(engine: str, chip: str) -> None:
    try:
        served = _served(engine, chip)
    except PerdollarError as refused:
        message = str(refused)
        assert f"{engine} does not run on {chip}; engines for {chip}: " in message, message
        assert "\n" not in message
        for named in _named_engines(message, chip):  # what it names does run there
            assert _served(named, chip).result.engine == named
        return
    assert served.result.engine == engine  # never another engine in its place


def test_engines_that_do_not_run_on_a_chip_are_refused_there() -> None:
    for engine, chip in (("sglang", "Inferentia2"), ("tensorrt-llm", "TPU-v5e"), ("tensorrt-llm", "MI300X")):
        with pytest.raises(PerdollarError, match=f"{engine} does not run on {chip}"):
            _served(engine, chip)


def test_a_ranking_under_a_named_engine_excludes_the_chips_it_does_not_run_on_and_says_why() -> None:
    done = run_perdollar("recommend", "llama-3.2-1b", "--inference", "--rps", "2", "--engine", "tensorrt-llm",
                         "--json", "--no-store", "--top", "3")  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    document = json.loads(done.stdout)
    reasons = {row["accelerator"]: row["reason"] for row in document["excluded"]}
    assert "tensorrt-llm does not run on MI300X; engines for MI300X: vllm" in reasons["MI300X"]
    assert "engines for Inferentia2: nxd-inference" in reasons["Inferentia2"]
    assert all(row["engine"] == "tensorrt-llm" for row in document["deployments"])


def test_a_stack_engine_named_ranks_only_its_chips() -> None:
    done = run_perdollar("recommend", "llama-3.2-1b", "--inference", "--rps", "2", "--engine",
                         "nxd-inference", "--json", "--no-store", "--top", "3")  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    deployments = json.loads(done.stdout)["deployments"]
    assert deployments and all(row["engine"] == "nxd-inference" for row in deployments)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--accelerator", "Trainium", "--gpus", "16", "--expert-parallel", "8"),
         "tensor parallel only on Trainium (a replica of 1, 2, 4, 8, 16 chips), not expert parallel 8"),
        (("--accelerator", "Inferentia2", "--gpus", "2", "--kv-precision", "fp8"),
         "KV cache in fp8 is not modelled"),
        (("--accelerator", "Inferentia2", "--gpus", "4", "--disaggregate", "1P1D"),
         "prefill and decode on the same replicas, not 1P1D"),
        (("--accelerator", "Inferentia2", "--engine", "sglang"), "sglang does not run on Inferentia2"),
        (("--accelerator", "TPU-v5e", "--engine", "tensorrt-llm"), "tensorrt-llm does not run on TPU-v5e"),
    ],
)  # fmt: skip
def test_what_a_chips_own_stack_cannot_serve_is_one_line(flags: tuple[str, ...], expected: str) -> None:
    model = "mixtral-8x7b" if "--expert-parallel" in flags else "llama-3.1-8b"
    done = run_perdollar("predict", model, *SERVING, *flags)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and expected in lines[0], done.stderr[-1500:]


def test_the_ranked_rows_of_a_chips_own_stack_take_speculative_decoding(catalog: catalog_mod.Catalog) -> None:
    arch = load_llm_workload("llama-3.1-8b", kind="inference").architecture
    common = {"input_tokens": 1000, "output_tokens": 300, "rps": 2.0, "ttft_p99_ms": None,
              "tpot_p99_ms": None, "precisions": ("bf16",)}  # fmt: skip
    plain = nongpu_serving_rows(arch, catalog, **common)
    guessed = nongpu_serving_rows(arch, catalog, **common, speculation=speculation("draft-model", 0.9, 3))
    chips = plain["engine"].isin([s.name for s in SERVING_STACKS.values()]) & plain["feasible"]
    assert chips.any()
    faster = guessed.loc[chips, "tpot_p99_ms"] < plain.loc[chips, "tpot_p99_ms"]
    assert faster.all()
