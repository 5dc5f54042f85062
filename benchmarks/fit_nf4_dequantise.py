"""The bandwidth share QLoRA's NF4 dequantisation reaches, fitted on perdollar's own QLoRA steps.

    PYTHONPATH=src python benchmarks/fit_nf4_dequantise.py

The fit: the share at which the predicted tokens/s of the QLoRA rows of
``gpu_lora_steps_h100.csv`` and ``gpu_lora_steps_h200.csv`` (PEFT + bitsandbytes NF4 with double
quantisation, measured on one H100 and one H200) are off by the least (median absolute log
error), everything else as shipped. Printed beside it, as a cross-check on older software: the
QLoRA/LoRA step ratio the share gives for Sebastian Raschka's published comparison ("Practical
Tips for Finetuning LLMs Using LoRA", Ahead of AI, 2023: QLoRA of Llama 2 7B on one A100, 39%
longer than LoRA), taken as micro-batch 1 of 512 tokens with checkpointing.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

from perdollar import catalog
from perdollar.predict.llm import device, parse_plan, predict_llm_training
from perdollar.workload.llm import load_llm_workload

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from llm_finetuning_accuracy import measured_rows  # noqa: E402  (this folder)

SHARES = [round(0.05 * i, 2) for i in range(2, 21)]


def _set(share: float) -> None:
    device.NF4_DEQUANTISE_BANDWIDTH_SHARE = share
    device.micro_batch_times.cache_clear()


def qlora_error(cat: catalog.Catalog) -> float:
    steps = (("gpu_lora_steps_h100.csv", "p5.48xlarge"), ("gpu_lora_steps_h200.csv", "p5en.48xlarge"))
    rows = [row for name, instance in steps for row in measured_rows(cat, HERE / name, instance)]
    rows = [row for row in rows if row["mode"] == "qlora"]
    return statistics.median(abs(math.log(r["predicted"] / r["published"])) for r in rows)


def raschka_ratio(cat: catalog.Catalog) -> float:
    arch = load_llm_workload("llama-2-7b").architecture
    a100 = cat.accelerators["A100-SXM4-80GB"]
    shape = {"gpus_per_node": 1, "nodes": 1, "seq_len": 512, "global_batch": 8}
    steps = {
        mode: predict_llm_training(arch, a100, plan=parse_plan(f"ddp+ac,{mode}16,hf"), **shape).step_time_s
        for mode in ("lora", "qlora")
    }
    return steps["qlora"] / steps["lora"]


def main() -> None:
    cat = catalog.load()
    errors = {}
    for share in SHARES:
        _set(share)
        errors[share] = qlora_error(cat)
        print(f"  share {share:.2f}: median |log error| of the measured QLoRA rows {errors[share]:.3f}")
    best = min(errors, key=lambda share: errors[share])
    _set(best)
    print(f"NF4_DEQUANTISE_BANDWIDTH_SHARE = {best:.2f}; Raschka 2023's shape: QLoRA/LoRA "
          f"{raschka_ratio(cat):.2f} (published 1.39)")  # fmt: skip


if __name__ == "__main__":
    main()
