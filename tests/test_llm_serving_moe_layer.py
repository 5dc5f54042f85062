"""The mixture-of-experts layer model part by part: routing and its floor, grouped products whose
efficiency follows the rows each expert sees, the busiest rank, the exchange within and between
hosts, data-parallel attention, absorbed MLA decode, the quantised expert kernels' own rate, and
dense models left on their own path."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.predict.expert_load import (
    PUBLISHED_EXPERTS_PER_RANK,
    PUBLISHED_IMBALANCE,
    PUBLISHED_RANKS,
    PUBLISHED_ROWS_PER_RANK,
    tile_efficiency,
)
from perdollar.predict.llm_serving import RequestShape, serving_format
from perdollar.predict.llm_serving.engine_cases import load_published_rows
from perdollar.predict.llm_serving.engines import ENGINES
from perdollar.predict.llm_serving.load import mixed_iteration, predict_llm_serving, serving_shape_problem
from perdollar.predict.llm_serving.moe_layer import (
    MoELayout,
    Rates,
    busiest_rank_load,
    exchange_s,
    moe_layer_time,
)
from perdollar.predict.llm_serving.moe_stage import moe_layout
from perdollar.predict.llm_serving.timing import (
    GroupShape,
    ServingEfficiency,
    busiest_group_prompts,
    decode_attention_flops,
    decode_step_time,
    prefill_time,
    weight_bytes_per_gpu,
)
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.architecture import DecoderArchitecture

ROWS = Path(__file__).resolve().parents[1] / "benchmarks" / "published_llm_serving_engines.csv"
FP8, BF16, MXFP4 = serving_format("fp8"), serving_format("bf16"), serving_format("mxfp4")
RATES = Rates(expert_bytes_per_s=2e12, weight_bytes_per_s=3e12, activation_bytes_per_s=3e12,
              flops_per_s=5e14, link_bytes_per_s=2e11, link_latency_s=8e-6)  # fmt: skip
PLAIN = ServingEfficiency()


def _arch(name: str) -> DecoderArchitecture:
    return load_llm_workload(name, kind="inference").architecture


@pytest.fixture(scope="module")
def catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


def test_grouped_products_get_more_efficient_as_each_expert_sees_more_rows() -> None:
    arch = _arch("qwen3-30b-a3b")
    assert [tile_efficiency(rows) for rows in (0, 1, 8, 32, 128, 1024)] == sorted(
        tile_efficiency(rows) for rows in (0, 1, 8, 32, 128, 1024)
    )
    assert tile_efficiency(1) < 0.05 and tile_efficiency(4096) > 0.99
    layout = MoELayout(ranks=1)
    times = [
        moe_layer_time(arch, BF16, layout, tokens, RATES, PLAIN) for tokens in (1, 8, 64, 512, 4096, 32768)
    ]
    # More tokens never take less time, and each token costs less: few rows stream the touched
    # experts' weights, many rows fill the tiles and run at the tensor rate.
    seconds = [t.experts_s for t in times]
    per_token = [s / tokens for s, tokens in zip(seconds, (1, 8, 64, 512, 4096, 32768), strict=True)]
    assert seconds == sorted(seconds) and per_token == sorted(per_token, reverse=True)
    assert times[0].experts_memory_s > times[0].experts_compute_s
    assert times[-1].experts_compute_s > times[-1].experts_memory_s
    assert [t.rows_per_expert for t in times] == sorted(t.rows_per_expert for t in times)


def test_no_all_to_all_without_expert_parallelism(catalog: catalog_mod.Catalog) -> None:
    arch, h200 = _arch("deepseek-v3"), catalog.accelerator("H200")
    sliced = moe_layer_time(arch, FP8, moe_layout(GroupShape(8)), 256, RATES, PLAIN)
    whole = moe_layer_time(arch, FP8, moe_layout(GroupShape(1, expert_parallel=8)), 256, RATES, PLAIN)
    assert sliced.exchange_s == 0.0 and sliced.busiest_load == 1.0
    assert whole.exchange_s > 2 * RATES.link_latency_s and whole.busiest_load > 1.0
    tensor = decode_step_time(arch, FP8, h200, GroupShape(8), 32, 2000)
    expert = decode_step_time(arch, FP8, h200, GroupShape(1, expert_parallel=8), 32, 2000)
    assert tensor.moe_all_to_all_s == 0.0 and expert.moe_all_to_all_s > 0.0
    assert tensor.moe_routing_s > 0 and tensor.moe_experts_s > 0


def test_the_busiest_rank_is_the_published_one_at_the_published_setting() -> None:
    layout = MoELayout(ranks=PUBLISHED_RANKS, whole_experts=True)
    load = busiest_rank_load(layout, PUBLISHED_EXPERTS_PER_RANK, PUBLISHED_ROWS_PER_RANK)
    assert load == pytest.approx(1 + PUBLISHED_IMBALANCE)
    # More experts a rank average their skew away; more ranks find a busier one; slices of every
    # expert on every rank are balanced by construction.
    assert busiest_rank_load(layout, 32, 1024) < load < busiest_rank_load(layout, 8, 16)
    assert busiest_rank_load(MoELayout(ranks=8, whole_experts=True), 8, 1024) < load
    assert busiest_rank_load(MoELayout(ranks=8, whole_experts=False), 8, 1024) == 1.0


def test_the_exchange_between_hosts_runs_at_the_network_rate() -> None:
    arch = _arch("deepseek-v3")
    one_host = MoELayout(ranks=16, whole_experts=True)
    two_hosts = MoELayout(ranks=16, whole_experts=True, gpus_per_host=8)
    network = replace(RATES, network_bytes_per_s=RATES.link_bytes_per_s / 8)
    inside = exchange_s(arch, FP8, one_host, 4096, network)
    across = exchange_s(arch, FP8, two_hosts, 4096, network)
    # 8 of the 15 peers are on the other host: their share of the bytes at an eighth of the link.
    volume = (inside - 2 * RATES.link_latency_s) * RATES.link_bytes_per_s
    assert across == pytest.approx(volume * 8 / 15 / network.network_bytes_per_s + 2 * RATES.link_latency_s)
    with pytest.raises(ValueError, match="network"):
        exchange_s(arch, FP8, two_hosts, 4096, RATES)


def test_the_engine_hides_only_what_it_overlaps() -> None:
    arch = _arch("deepseek-v3")
    layout = MoELayout(ranks=8, whole_experts=True, routing_groups=8)
    exposed = moe_layer_time(arch, FP8, layout, 512, RATES, PLAIN)
    hidden = moe_layer_time(arch, FP8, layout, 512, RATES, replace(PLAIN, exchange_overlap=1.0))
    assert hidden.exchange_s == pytest.approx(max(exposed.exchange_s - exposed.experts_s, 0.0))


def test_the_fused_moe_floor_is_paid_once_a_moe_layer(catalog: catalog_mod.Catalog) -> None:
    arch, h100 = _arch("qwen3-30b-a3b"), catalog.accelerator("H100")
    bare = decode_step_time(arch, BF16, h100, GroupShape(), 1, 1000, PLAIN)
    floored = decode_step_time(arch, BF16, h100, GroupShape(), 1, 1000, replace(PLAIN, moe_floor_s=50e-6))
    assert floored.seconds - bare.seconds == pytest.approx(arch.moe_layers * 50e-6)
    assert floored.moe_routing_s - bare.moe_routing_s == pytest.approx(arch.moe_layers * 50e-6)


def test_quantised_expert_kernels_stream_at_their_own_share(catalog: catalog_mod.Catalog) -> None:
    arch, h100 = _arch("gpt-oss-120b"), catalog.accelerator("H100")
    own = replace(PLAIN, expert_weight_only_bandwidth=0.5)
    step = decode_step_time(arch, MXFP4, h100, GroupShape(), 1, 1000, own)
    # One token: 4 experts of each layer, MXFP4 (4.25 bits a weight), at half the datasheet.
    read = arch.moe_layers * 4 * arch.expert_params * MXFP4.expert_weight_bytes
    assert step.moe_experts_memory_s == pytest.approx(read / (h100.memory_bandwidth_gbps * 1e9 * 0.5))
    # The dense weight-only share no longer sets the experts' rate; unset, it still does.
    other = decode_step_time(
        arch, MXFP4, h100, GroupShape(), 1, 1000, replace(own, weight_only_bandwidth=0.3)
    )
    assert other.moe_experts_memory_s == step.moe_experts_memory_s
    unset = decode_step_time(arch, MXFP4, h100, GroupShape(), 1, 1000, PLAIN)
    assert unset.moe_experts_memory_s == pytest.approx(read / (h100.memory_bandwidth_gbps * 1e9 * 0.6))


def test_mla_decodes_with_its_up_projections_absorbed(catalog: catalog_mod.Catalog) -> None:
    arch = _arch("deepseek-v3")
    # Each of 128 heads scores the 512 + 64 wide latent and rotary key and sums the 512 wide latent.
    assert decode_attention_flops(arch) == 2.0 * 61 * 128 * (512 + 64 + 512)
    dense = _arch("llama-3.1-8b")
    assert decode_attention_flops(dense) == 4.0 * 32 * 32 * 128


def test_data_parallel_attention_beside_sliced_experts(catalog: catalog_mod.Catalog) -> None:
    arch, h200 = _arch("deepseek-v3"), catalog.accelerator("H200")
    shape = GroupShape(tensor_parallel=1, data_parallel_attention=8)
    roles = arch.params_by_role()
    ffn = roles["dense_mlp"] + roles["shared_experts"]
    outer = arch.embedding_params + arch.lm_head_params
    rest = arch.total_params - outer - roles["routed_experts"] - ffn
    # Attention, norms and the router are held whole on every rank; the dense MLPs, the shared
    # experts and the routed experts are split over all 8 (16-bit embedding and head).
    expected = rest * 1.0 + 2.0 * outer + (ffn + roles["routed_experts"]) / 8
    assert weight_bytes_per_gpu(arch, FP8, shape) == pytest.approx(expected)
    assert shape.gpus == 8 and shape.attention_data_parallel == 8 and shape.expert_split == 8
    # Four sequences on eight groups: the busiest group runs one, and every rank reads its attention.
    four = decode_step_time(arch, FP8, h200, shape, 4, 3000)
    one = decode_step_time(arch, FP8, h200, shape, 1, 3000)
    assert four.memory_s - four.moe_experts_memory_s == pytest.approx(one.memory_s - one.moe_experts_memory_s)
    assert "mixture-of-experts" in serving_shape_problem(_arch("llama-3.1-8b"), shape)
    assert "ranks" in serving_shape_problem(arch, GroupShape(1, expert_parallel=4, data_parallel_attention=8))
    result = predict_llm_serving(arch, h200, FP8, RequestShape(3200, 800), shape=shape)
    assert result.fits and result.max_concurrent_sequences % 8 == 0


def test_a_prompt_is_prefilled_whole_by_one_attention_group(catalog: catalog_mod.Catalog) -> None:
    arch, h200 = _arch("deepseek-v3"), catalog.accelerator("H200")
    shape = GroupShape(tensor_parallel=1, expert_parallel=8, data_parallel_attention=8)
    # Under one prompt an iteration, all of it lands on one group; up to one a group, one each.
    assert busiest_group_prompts(0.25, shape) == 0.25
    assert busiest_group_prompts(5.0, shape) == 1.0
    assert busiest_group_prompts(24.0, shape) == 3.0
    assert busiest_group_prompts(0.25, GroupShape(tensor_parallel=8)) == 0.25
    # Eight prompts, one a group, cost each group what one prompt alone costs its group: far less
    # than eight lone prompts, whose attention runs on one GPU while the other seven wait.
    one = prefill_time(arch, FP8, h200, shape, 8192)
    eight = prefill_time(arch, FP8, h200, shape, 8192, sequences=8)
    assert eight.seconds < 4.0 * one.seconds
    # So a continuous-batching iteration grows with the prompts it starts, which one group carries
    # (dstack's SGLang rows with data-parallel attention: TPOT 80 ms at 64 running, 111 ms at 128).
    work = RequestShape(3200, 800)
    at_64 = mixed_iteration(arch, FP8, h200, shape, 64, work)
    at_128 = mixed_iteration(arch, FP8, h200, shape, 128, work)
    assert at_128.seconds > 1.15 * at_64.seconds


def test_published_rows_with_data_parallel_attention_are_read_so(catalog: catalog_mod.Catalog) -> None:
    cases = load_published_rows(ROWS, catalog)
    spread = [case for case in cases if case.shape.attention_data_parallel > 1]
    assert spread and {case.engine for case in spread} == {"sglang"}
    assert all(case.shape.gpus == 8 and case.shape.tensor_parallel == 1 for case in spread)
    assert all(case.shape == GroupShape(8) for case in cases if "InferenceX/issues/870" in case.source)


def test_dense_models_stay_on_their_own_path(catalog: catalog_mod.Catalog) -> None:
    arch, h100 = _arch("llama-3.1-8b"), catalog.accelerator("H100")
    eff = ENGINES["vllm"].step_efficiency()
    step = decode_step_time(arch, FP8, h100, GroupShape(2), 8, 1000, eff)
    assert (step.moe_routing_s, step.moe_experts_s, step.moe_all_to_all_s) == (0.0, 0.0, 0.0)
    # Its MoE parameters touch nothing a dense model does.
    moe_free = replace(eff, moe_floor_s=1.0, expert_bandwidth=0.01, expert_weight_only_bandwidth=0.01)
    assert decode_step_time(arch, FP8, h100, GroupShape(2), 8, 1000, moe_free) == step
    assert prefill_time(arch, FP8, h100, GroupShape(2), 2000, moe_free) == prefill_time(
        arch, FP8, h100, GroupShape(2), 2000, eff
    )
    result = predict_llm_serving(arch, h100, FP8, RequestShape(1000, 300), efficiency=eff)
    assert set(result.breakdown_ms) == {"memory", "compute", "communication", "overhead"}


@pytest.mark.parametrize(
    ("model", "gpus", "precision"),
    [("deepseek-v3", 8, "fp8"), ("qwen3-30b-a3b", 1, "bf16"), ("gpt-oss-120b", 1, "mxfp4")],
)
def test_the_step_breakdown_shows_the_moe_parts(
    model: str, gpus: int, precision: str, catalog: catalog_mod.Catalog
) -> None:
    chip = "H200" if gpus == 8 else "H100"
    args = ("predict", model, "--inference", "--accelerator", chip, "--gpus", str(gpus), "--tensor-parallel",
            str(gpus), "--precision", precision, "--batch", "32", "--input-tokens", "1000",
            "--output-tokens", "1000")  # fmt: skip
    done = run_perdollar(*args, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    breakdown = json.loads(done.stdout)["breakdown_ms"]
    # The figures are the model's: the same decode step asked of the library.
    arch, accelerator = _arch(model), catalog.accelerator(chip)
    engine = ENGINES["vllm"]
    fmt = engine.serving_format(serving_format(precision))
    step = decode_step_time(arch, fmt, accelerator, GroupShape(gpus), 32,
                            RequestShape(1000, 1000).mean_context,
                            engine.step_efficiency())  # fmt: skip
    assert breakdown["moe_routing"] == pytest.approx(step.moe_routing_s * 1e3)
    assert breakdown["moe_experts"] == pytest.approx(step.moe_experts_s * 1e3)
    assert breakdown["moe_all_to_all"] == 0.0  # tensor parallel: no dispatch or combine
    assert breakdown["moe_experts"] > 0 and breakdown["moe_routing"] > 0
    text = run_perdollar(*args)
    assert text.returncode == 0, text.stderr[-2000:]
    line = next(line for line in text.stdout.splitlines() if line.startswith("step (ms):"))
    assert "MoE routing" in line and "experts" in line and "all-to-all 0" in line


def test_the_step_breakdown_shows_the_all_to_all_under_expert_parallelism() -> None:
    done = run_perdollar("predict", "deepseek-v3", "--inference", "--accelerator", "H200", "--gpus", "8",
                         "--tensor-parallel", "1", "--expert-parallel", "8", "--precision", "fp8",
                         "--batch", "32", "--input-tokens", "1000", "--output-tokens", "1000",
                         "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["expert_parallel"] == 8 and document["breakdown_ms"]["moe_all_to_all"] > 0
