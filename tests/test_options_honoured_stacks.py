"""What a chip's stack, an engine or a framework cannot honour is refused in one line, never replaced."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.ask.llm_prediction import predict_llm
from perdollar.ask.llm_serving_prediction import BUNDLED_CONFIGS, predict_language_model_serving
from perdollar.ask.questions import PlanFlags
from perdollar.errors import PerdollarError
from perdollar.predict.accelerator_stacks import SERVING_STACKS
from perdollar.predict.llm import parse_plan
from perdollar.predict.llm.frame import llm_prediction_frame
from perdollar.predict.llm.frameworks import FRAMEWORKS, MODEL_PARALLEL
from perdollar.predict.llm.planner import plan_shapes
from perdollar.predict.llm_serving.engines import ENGINES
from perdollar.predict.llm_serving.features import speculation
from perdollar.predict.nongpu_llm import nongpu_serving_rows
from perdollar.question import LanguageModelSettings
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


# ---- training: the chip's own stack, and each framework's declared limits ----


def _trained(instance: str, *, settings: LanguageModelSettings | None = None, flags: PlanFlags | None = None,
             workload: str = "llama-3.1-8b") -> dict:  # type: ignore[type-arg]  # fmt: skip
    asked = settings or LanguageModelSettings()
    return predict_llm(workload, instance, None, 1, None, asked, flags or PlanFlags())


@pytest.mark.parametrize("instance", ["trn1.32xlarge", "tpu-v5litepod-8"])
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_a_gpu_framework_on_a_chip_with_its_own_stack_is_refused(framework: str, instance: str) -> None:
    expected = r"does not run on (Trainium|TPU-v5e): it trains under"
    with pytest.raises(PerdollarError, match=expected) as refused:
        _trained(instance, settings=LanguageModelSettings(framework=framework))
    assert "\n" not in str(refused.value)


def test_a_trainium_prediction_is_its_stacks_as_the_ranking_has_it(catalog: catalog_mod.Catalog) -> None:
    predicted = _trained("trn1.32xlarge")
    only = replace(catalog, instance_types={k: v for k, v in catalog.instance_types.items()
                                            if v.name == "trn1.32xlarge"})  # fmt: skip
    ranked = llm_prediction_frame(load_llm_workload("llama-3.1-8b"), only, (1,), keep=False).iloc[0]
    text = predicted["plan_text"]
    assert text.startswith("NxD Training (Neuron)") and "Megatron" not in text
    assert predicted["tokens_per_second"] == pytest.approx(ranked["tokens_per_second"])
    narrower = _trained("trn1.32xlarge", flags=PlanFlags(tensor_parallel=8),
                        settings=LanguageModelSettings(micro_batch=2))  # fmt: skip
    assert (narrower["plan"]["tensor_parallel"], narrower["plan"]["micro_batch"]) == (8, 2)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (PlanFlags(expert_parallel=8), "tensor parallel 1, 2, 4, 8, 16 only on Trainium: --expert-parallel"),
        (PlanFlags(tensor_parallel=3), "takes tensor parallel 1, 2, 4, 8, 16, not 3"),
        (PlanFlags(context_parallel=2), "--context-parallel cannot apply there"),
    ],
)  # fmt: skip
def test_what_trainiums_stack_cannot_train_is_refused(flags: PlanFlags, expected: str) -> None:
    with pytest.raises(PerdollarError, match=re.escape(expected)):
        _trained("trn1.32xlarge", flags=flags, workload="mixtral-8x7b")


def test_a_fixed_plan_the_stack_cannot_run_excludes_its_chips(catalog: catalog_mod.Catalog) -> None:
    only = replace(catalog, instance_types={k: v for k, v in catalog.instance_types.items()
                                            if v.name == "trn1.32xlarge"})  # fmt: skip
    workload = load_llm_workload("llama-3.1-8b")
    refused = llm_prediction_frame(workload, only, (1,), plan=parse_plan("fsdp"), keep=False).iloc[0]
    assert "NxD Training (Neuron) runs zero1+ac" in refused["excluded_reason"] and not refused["fits"]
    kept = llm_prediction_frame(workload, only, (1,), plan=parse_plan("zero1+ac,tp4"), keep=False).iloc[0]
    assert kept["fits"] and kept["plan"].tensor_parallel == 4


@pytest.mark.parametrize("flag", ["--tensor-parallel", "--pipeline-parallel"])
def test_unsloth_splits_no_model_over_gpus(flag: str) -> None:
    done = run_perdollar("predict", "llama-3.1-8b", "--instance", "p5.48xlarge", "--framework", "unsloth",
                         "--finetune", "lora", "--plan", "fsdp", flag, "2", "--no-store")  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Unsloth runs no" in lines[0], done.stderr[-1500:]
    assert "frameworks that do: hf" in lines[0]


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_every_searched_plan_stays_within_its_frameworks_parallelism(framework: str) -> None:
    arch = load_llm_workload("mixtral-8x7b").architecture
    shapes = plan_shapes(arch, 8, 2, finetune="full", lora_rank=16, framework=framework, seq_len=32768,
                         global_batch=256)  # fmt: skip
    runs = FRAMEWORKS[framework].model_parallel
    used = {kind for shape in shapes for kind, name in MODEL_PARALLEL.items() if getattr(shape, name) > 1}
    assert shapes and used == set(runs)  # every kind it runs is searched, and no other


# ---- speculative decoding: MTP needs the model's own multi-token-prediction modules ----


@pytest.mark.parametrize("command", ["predict", "recommend"])
def test_mtp_on_a_model_without_an_mtp_head_is_refused_naming_what_applies(command: str) -> None:
    where = ("--accelerator", "H100") if command == "predict" else ("--rps", "2")
    done = run_perdollar(command, "llama-3.1-8b", *SERVING, *where, "--speculative", "mtp")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-1500:]
    assert "no multi-token-prediction head" in lines[0]
    assert "speculative methods for it: draft-model" in lines[0]


def test_mtp_reads_the_head_from_the_models_config(tmp_path: Path) -> None:
    config = json.loads((BUNDLED_CONFIGS / "deepseek-v2-lite.json").read_text())
    without, with_head = tmp_path / "without.json", tmp_path / "with.json"
    without.write_text(json.dumps(config))
    with_head.write_text(json.dumps({**config, "num_nextn_predict_layers": 1}))
    asked = {"accelerator": "H100", "gpus": 1, "tensor_parallel": None, "pipeline_parallel": 1,
             "input_tokens": 1000, "output_tokens": 300, "precision": "bf16", "batch": None,
             "features": LanguageModelSettings(speculative="mtp")}  # fmt: skip
    with pytest.raises(PerdollarError, match="no multi-token-prediction head"):
        predict_language_model_serving(str(without), **asked)  # type: ignore[arg-type]
    served = predict_language_model_serving(str(with_head), **asked)  # type: ignore[arg-type]
    assert served.work.speculation is not None and served.work.speculation.method == "mtp"
