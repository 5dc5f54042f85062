"""How a trainer's expert-parallel exchange is dispatched and hidden: DeepEP sends a token once per
rank and once per host, an overlapped exchange runs beside compute, and under context parallelism
the experts' share of a layer counts attention over the whole sequence."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.predict.llm import LLMEfficiency, parse_plan, predict_llm_training
from perdollar.workload.llm import load_llm_workload

SEQ = 4096


@pytest.fixture(scope="module")
def h100():  # type: ignore[no-untyped-def]
    return catalog.load().accelerators["H100-SXM5-80GB"]


@pytest.fixture(scope="module")
def qwen3():  # type: ignore[no-untyped-def]
    return load_llm_workload("qwen3-30b-a3b", seq_len=SEQ, global_batch=64).architecture


def _predict(arch, accelerator, token: str, nodes: int = 1, seq_len: int = SEQ, batch: int = 64, **kwargs):  # type: ignore[no-untyped-def]
    return predict_llm_training(
        arch, accelerator, gpus_per_node=8, nodes=nodes, plan=parse_plan(token), seq_len=seq_len,
        global_batch=batch, network_gbps=3200, **kwargs,
    )  # fmt: skip


def test_deepep_plan_token_reads_back_and_rejects_suffixes_of_other_parts() -> None:
    plan = parse_plan("zero1+sac,tp2,pp8,vp4,ep32-deepep-overlapped,megatron")
    assert (plan.expert_dispatch, plan.expert_parallel_comm) == ("deepep", "overlapped")
    assert parse_plan(plan.token()) == plan
    assert parse_plan("fsdp,ep8").expert_dispatch == "all-to-all"
    done = run_perdollar(
        "predict", "qwen3-30b-a3b", "--instance", "p5.48xlarge", "--plan", "fsdp+ac,tp2-deepep"
    )
    assert done.returncode == 2
    assert "cannot read 'tp2-deepep'" in done.stderr and "epN[-deepep][-overlapped]" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_deepep_sends_a_token_once_to_each_rank_holding_its_experts(qwen3, h100) -> None:  # type: ignore[no-untyped-def]
    copies = _predict(qwen3, h100, "fsdp+ac,ep8", efficiency=LLMEfficiency(expert_load_skew=0.0))
    deepep = _predict(qwen3, h100, "fsdp+ac,ep8-deepep", efficiency=LLMEfficiency(expert_load_skew=0.0))
    # 8 of 128 experts, 16 a rank: a token reaches 8·(1 − C(112,8)/C(128,8)) = 5.4 ranks, 4.7 of
    # them others, where an all-to-all sends 8 × 7/8 = 7 copies
    reached = 1 - math.comb(112, 8) / math.comb(128, 8)
    ratio = deepep.moe["all_to_all_s"] / copies.moe["all_to_all_s"]
    assert ratio == pytest.approx(7 * reached / 7, rel=0.02)
    assert deepep.tokens_per_second > copies.tokens_per_second


def test_deepep_crosses_the_nics_once_per_host_reached(qwen3) -> None:  # type: ignore[no-untyped-def]
    from perdollar.predict.llm.moe_training import dispatch_volumes, local_tokens

    plan = parse_plan("fsdp,ep32-deepep")
    tokens = local_tokens(plan, SEQ)
    local, remote = dispatch_volumes(qwen3, plan, tokens, gpus_per_node=8)
    row = qwen3.hidden_size * 2.0
    # 4 hosts of 32 experts: a token's 8 experts reach each other host with 1 − C(96,8)/C(128,8)
    hosts = 3 * (1 - math.comb(96, 8) / math.comb(128, 8))
    assert remote == pytest.approx(tokens * hosts * row)
    _, remote_copies = dispatch_volumes(qwen3, parse_plan("fsdp,ep32"), tokens, gpus_per_node=8)
    assert remote_copies == pytest.approx(tokens * 8 * 24 / 32 * row)  # every copy bound off the host
    assert remote < remote_copies / 2
    assert local > 0


def test_an_overlapped_exchange_hides_behind_the_stages_compute(qwen3, h100) -> None:  # type: ignore[no-untyped-def]
    blocking = _predict(qwen3, h100, "fsdp+ac,ep16-deepep", nodes=2, batch=128)
    overlapped = _predict(qwen3, h100, "fsdp+ac,ep16-deepep-overlapped", nodes=2, batch=128)
    assert blocking.moe["all_to_all_s"] > 0
    assert 0.0 <= overlapped.moe["all_to_all_s"] < blocking.moe["all_to_all_s"]
    assert overlapped.tokens_per_second > blocking.tokens_per_second


def _qwen3_235b(folder: Path, seq_len: int):  # type: ignore[no-untyped-def]
    config = {  # Qwen/Qwen3-235B-A22B config.json (architecture keys)
        "model_type": "qwen3_moe", "hidden_size": 4096, "num_hidden_layers": 94, "num_attention_heads": 64,
        "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 12288, "moe_intermediate_size": 1536,
        "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False,
    }  # fmt: skip
    path = folder / "qwen3-235b-a22b.json"
    path.write_text(json.dumps(config))
    return load_llm_workload(str(path), seq_len=seq_len, global_batch=256).architecture


def test_imbalance_costs_less_of_a_long_context_step_split_over_context_parallel(h100, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each context-parallel rank's queries attend over the whole sequence: at 128k over 8 ranks
    attention takes more of a layer than at 16k on one, and the busiest expert rank less."""
    costs = []
    for seq_len, cp in ((16384, ""), (131072, ",cp8")):
        arch = _qwen3_235b(tmp_path, seq_len)
        token = f"zero1+sac,tp4,pp8,vp4{cp},ep8-deepep,megatron"
        forced, dropless = (
            _predict(arch, h100, token, nodes=32, seq_len=seq_len, batch=256,
                     efficiency=LLMEfficiency(expert_load_skew=skew))
            for skew in (0.0, LLMEfficiency().expert_load_skew)
        )  # fmt: skip
        costs.append(forced.tokens_per_second / dropless.tokens_per_second)
    assert costs[0] > costs[1] > 1.0
