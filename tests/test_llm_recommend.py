"""`recommend` for language models: sharded plans ranked in tokens, through the real command line."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.predict.frame import TIGHT_FIT_RESERVE, usable_memory_bytes


def answer(*args: str) -> dict:
    completed = run_perdollar("recommend", *args, "--no-store", "--json", timeout=600, columns=200)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_an_8b_model_is_sharded_on_eight_gpu_hosts_and_one_24_gb_gpu_is_explained() -> None:
    result = answer("llama-3.1-8b", "--tokens", "2e10", "--deadline", "7d")
    feasible = [e for e in result["estimates"] if not e["excluded_reason"]]
    # Among GPUs (TPU slices and Trainium hosts are ranked beside them, with their own shapes).
    gpus = [e for e in feasible if not e["accelerator"].startswith(("TPU", "Trainium", "Inferentia"))]
    top = gpus[:5]
    assert top and all(e["accelerators_per_node"] == 8 for e in top)
    eight_gpu_hosts = {"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200", "MI300X"}
    assert {e["accelerator"] for e in top} <= eight_gpu_hosts
    assert all(e["plan"] and e["plan_text"] and 0 < e["mfu"] < 1 for e in feasible)
    assert all(e["label"].endswith(f" with {e['plan']}") for e in feasible)
    # Full training of 8B parameters cannot sit on one 24 GB board: said with the bytes.
    a10g = [
        e
        for e in result["estimates"]
        if e["accelerator"] == "A10G" and e["nodes"] == 1 and e["accelerators_per_node"] == 1
    ]
    assert a10g and all(e["excluded_reason"].startswith("needs ") for e in a10g)
    assert "has 21.6 GiB" in a10g[0]["excluded_reason"]
    assert "cannot hold full training of llama-3.1-8b" in result["explanation"]
    assert result["question"]["target_samples"] == 2e10


def test_qlora_puts_the_8b_model_on_one_24_gb_gpu() -> None:
    # On AWS, where the A10G is rented: which chips rank first across clouds is not the point here.
    result = answer(
        "llama-3.1-8b", "--tokens", "2e8", "--finetune", "qlora", "--max-nodes", "1", "--cloud", "aws"
    )
    one_a10g = [
        e
        for e in result["estimates"]
        if e["accelerator"] == "A10G" and e["accelerators_per_node"] == 1 and not e["excluded_reason"]
    ]
    assert one_a10g, "QLoRA should fit one A10G"
    best = one_a10g[0]
    assert "qlora" in best["plan"] and best["memory_per_gpu_gib"] < 21.6
    assert best["samples_per_dollar"] > 0  # tokens per dollar


def test_a_70b_model_never_gets_a_plan_that_does_not_fit_and_spans_hosts() -> None:
    cat = catalog_mod.load()
    result = answer("llama-3.1-70b", "--tokens", "1e9")
    feasible = [e for e in result["estimates"] if not e["excluded_reason"]]
    assert feasible
    for estimate in feasible:
        device_gib = cat.accelerators[estimate["accelerator"]].memory_gib
        comfortable = usable_memory_bytes(device_gib) / 2**30
        # A plan may eat into the reserve down to its last 5% of the device, and then says it is tight.
        limit = device_gib * (1 - TIGHT_FIT_RESERVE)
        assert estimate["memory_per_gpu_gib"] <= limit + 1e-6, estimate["label"]
        if estimate["memory_per_gpu_gib"] > comfortable + 1e-6:
            assert any(r.startswith("tight") for r in estimate["remarks"]), estimate["label"]
    multi_node = [e for e in feasible if e["nodes"] > 1]
    assert multi_node
    assert any(e["plan"].split(",")[0].split("+")[0] in ("fsdp", "hsdp") for e in multi_node)
    assert any(",tp" in e["plan"] for e in multi_node)


def test_a_fixed_plan_is_the_plan_of_every_estimate() -> None:
    result = answer(
        "gpt-125m", "--tokens", "1e8", "--plan", "fsdp", "--tensor-parallel", "2", "--max-nodes", "1"
    )
    # Micro-batch and accumulation follow each cluster's size; strategy and parallelism are fixed.
    plans = {tuple(e["plan"].split(",")[:2]) for e in result["estimates"] if not e["excluded_reason"]}
    assert plans == {("fsdp", "tp2")}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("mlp", "--tokens", "1e9"), "--tokens apply to language models only"),
        (("llama-3.1-8b", "--samples", "1e9"), "counted in tokens"),
        (("llama-3.1-8b", "--tensor-parallel", "2"), "fix part of a plan"),
        (("llama-3.1-8b", "--plan", "banana"), "plan"),
    ],
)
def test_language_model_options_misused_are_one_line_errors(args: tuple[str, ...], message: str) -> None:
    completed = run_perdollar("recommend", *args, "--no-store", timeout=600, columns=200)
    assert completed.returncode == 2, completed.stderr[-1000:]
    assert message in completed.stderr and "Traceback" not in completed.stderr


def test_compare_and_export_accept_the_labels_recommend_prints_for_a_language_model() -> None:
    result = answer("gpt-125m", "--tokens", "1e9", "--max-nodes", "2", "--cloud", "aws")
    labels = [e["label"] for e in result["estimates"] if not e["excluded_reason"]][:2]
    assert all(" with " in label for label in labels)
    completed = run_perdollar("compare", "gpt-125m", *labels, "--tokens", "1e9", "--no-store", "--json",
                              timeout=600, columns=200)  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    compared = json.loads(completed.stdout)["comparison"]
    assert "per token" in compared["summary"] and "per sample" not in compared["summary"]
    # Each label names its region, nodes and plan: compare prices exactly the ranked configuration.
    ranked = [e for e in result["estimates"] if not e["excluded_reason"]][:2]
    for mine, theirs in zip(compared["estimates"], ranked, strict=True):
        assert (mine["instance_type"], mine["region"], mine["nodes"], mine["plan"]) == (
            theirs["instance_type"], theirs["region"], theirs["nodes"], theirs["plan"],
        )  # fmt: skip
        assert mine["samples_per_second"] == pytest.approx(theirs["samples_per_second"], rel=1e-9)
    exported = run_perdollar("export", labels[0], "--format", "ec2", "--json", columns=200)
    assert exported.returncode == 0, exported.stderr[-1000:]
    assert json.loads(exported.stdout)["configuration"] == labels[0]


COMPARE = ("compare", "llama-3.1-8b", "1x p5.48xlarge", "2x p4d.24xlarge", "--tokens", "2e10", "--no-store")


def test_compare_takes_the_workload_and_plan_options_recommend_takes() -> None:
    rates = {}
    for seq_len in ("1024", "4096"):
        completed = run_perdollar(*COMPARE, "--seq-len", seq_len, "--plan", "fsdp+ac", "--micro-batch", "2",
                                  "--json", timeout=600, columns=200)  # fmt: skip
        assert completed.returncode == 0, completed.stderr[-2000:]
        estimates = json.loads(completed.stdout)["comparison"]["estimates"]
        assert all(e["plan"].startswith("fsdp+ac,mb2") for e in estimates)
        rates[seq_len] = [e["samples_per_second"] for e in estimates]
    # Four times the tokens per sequence change every machine's rate: the option reached the model.
    assert all(abs(long / short - 1) > 0.01 for short, long in zip(rates["1024"], rates["4096"], strict=True))
    table = run_perdollar(*COMPARE, "--finetune", "lora", timeout=600, columns=200)
    assert table.returncode == 0, table.stderr[-2000:]
    lines = table.stdout.splitlines()
    # Each row names the offer priced over the plan it was predicted under: "(aws …) with lora,…".
    first = next(i for i, line in enumerate(lines) if line.startswith("│ 1x p5.48xlarge"))
    assert " with " in lines[first + 1] and "lora" in lines[first + 1]
    partial = run_perdollar(*COMPARE, "--tensor-parallel", "2", timeout=600, columns=200)
    assert partial.returncode == 2 and "--plan fsdp --tensor-parallel 2" in partial.stderr
