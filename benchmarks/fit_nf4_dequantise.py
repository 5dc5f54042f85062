"""The bandwidth share of QLoRA's NF4 dequantisation that makes QLoRA 39% slower than LoRA.

    PYTHONPATH=src python benchmarks/fit_nf4_dequantise.py

The published comparison (Sebastian Raschka, "Practical Tips for Finetuning LLMs Using LoRA",
Ahead of AI, 2023): Llama 2 7B on one A100, QLoRA (NF4 with double quantisation) took 39% longer
to train than LoRA. Taken here as micro-batch 1 of 512 tokens with activation checkpointing,
eager PyTorch with PEFT-style modules. Prints the share bisected to that ratio, to be written
into ``perdollar.predict.llm.device.NF4_DEQUANTISE_BANDWIDTH_SHARE``.
"""

from __future__ import annotations

from perdollar import catalog
from perdollar.predict.llm import device, parse_plan, predict_llm_training
from perdollar.workload.llm import load_llm_workload

PUBLISHED_RATIO = 1.39
SHAPE = {"gpus_per_node": 1, "nodes": 1, "seq_len": 512, "global_batch": 8}


def ratio(share: float) -> float:
    device.NF4_DEQUANTISE_BANDWIDTH_SHARE = share
    device.micro_batch_times.cache_clear()
    arch = load_llm_workload("llama-2-7b").architecture
    a100 = catalog.load().accelerators["A100-SXM4-80GB"]
    steps = {
        mode: predict_llm_training(arch, a100, plan=parse_plan(f"ddp+ac,{mode}16,hf"), **SHAPE).step_time_s
        for mode in ("lora", "qlora")
    }
    return steps["qlora"] / steps["lora"]


def main() -> None:
    low, high = 0.01, 1.0  # the ratio falls as the share rises
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if ratio(middle) > PUBLISHED_RATIO else (low, middle)
    share = (low + high) / 2
    print(f"NF4_DEQUANTISE_BANDWIDTH_SHARE = {share:.3f} (QLoRA/LoRA step {ratio(share):.3f})")


if __name__ == "__main__":
    main()
