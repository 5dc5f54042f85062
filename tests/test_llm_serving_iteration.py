"""The load model's iteration, worked out once per replica, gives the full iteration's floats.

The deployment search runs a replica's continuous-batching iteration tens of thousands of times;
:func:`iteration_seconds` keeps what does not depend on the running batch. Its answers must be the
very floats :func:`mixed_iteration` gives, on every layout and workload it takes, or the search's
bisections would land elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving import GroupShape, RequestShape, serving_format
from perdollar.predict.llm_serving.engines import serving_engine
from perdollar.predict.llm_serving.features import speculation
from perdollar.predict.llm_serving.load import mixed_iteration, predict_llm_serving
from perdollar.predict.llm_serving.load_points import at_rate, iteration_seconds, load_points
from perdollar.workload.llm.architecture import from_hf_config, load_config_file

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"
H100, A100 = "H100-SXM5-80GB", "A100-SXM4-80GB"
DRAFTED = RequestShape(1000, 300, speculation=speculation("draft-model", None, None))
RUNNING = (1.0, 1.7, 8.0, 63.5, 256.0, 1024.0)


@pytest.fixture(scope="module")
def catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


@pytest.mark.parametrize(
    ("model", "chip", "precision", "shape", "work"),
    [
        ("llama-3.1-8b", H100, "fp16", GroupShape(), RequestShape(1000, 300)),
        ("llama-3.1-8b", "L4", "fp8", GroupShape(), RequestShape(20000, 2000, prefix_share=0.5)),
        ("llama-3.1-70b", H100, "fp8", GroupShape(tensor_parallel=4), RequestShape(1500, 300)),
        ("llama-3.1-70b", A100, "fp16", GroupShape(tensor_parallel=2, pipeline_parallel=2),
         RequestShape(800, 200)),
        ("qwen3-30b-a3b", H100, "fp16", GroupShape(expert_parallel=2), RequestShape(1000, 300)),
        ("llama-3.1-8b", H100, "fp16", GroupShape(), DRAFTED),
    ],
)  # fmt: skip
def test_the_iteration_worked_out_once_gives_the_same_seconds(
    catalog: catalog_mod.Catalog, model: str, chip: str, precision: str, shape: GroupShape, work: RequestShape
) -> None:
    arch = from_hf_config(load_config_file(CONFIGS / f"{model}.json"), name=model)
    accelerator, fmt = catalog.accelerator(chip), serving_format(precision)
    eff = serving_engine("vllm").step_efficiency()
    once = iteration_seconds(arch, fmt, accelerator, shape, work, eff)
    for running in RUNNING:
        full = mixed_iteration(arch, fmt, accelerator, shape, running, work, eff).seconds
        assert once(running) == full, (model, shape, running)


def test_load_points_of_one_replica_are_at_rate_at_each_rate(catalog: catalog_mod.Catalog) -> None:
    arch = from_hf_config(load_config_file(CONFIGS / "llama-3.1-8b.json"), name="llama-3.1-8b")
    accelerator, fmt, work = (
        catalog.accelerator(H100),
        serving_format("fp16"),
        RequestShape(1000, 300),
    )
    top = predict_llm_serving(arch, accelerator, fmt, work)
    points = load_points(arch, accelerator, fmt, work, ceiling=top)
    for share in (0.001, 0.3, 0.9, 1.0, 1.2):  # the last two: at and over the ceiling
        rate = share * top.requests_per_second
        assert points(rate) == at_rate(arch, accelerator, fmt, work, rate, ceiling=top)
