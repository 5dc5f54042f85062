"""Predict every full fine-tuning step that `gpu_full_finetune_steps.py` measured, and print both.

    PYTHONPATH=src python3 benchmarks/gpu_full_finetune_check.py [CSV] [--accelerator H200-SXM-141GB]

Each row is asked of the training model as it ran: one GPU, Hugging Face transformers (``hf``,
eager), the row's precision (``amp-bf16``: float32 master weights and moments under autocast;
``bf16``: pure bf16), its optimizer (fused AdamW or bitsandbytes' AdamW 8-bit) and whether the
optimizer stepped inside the backward (``+optimizer-in-backward``). Printed per row: the step and
the optimizer step alone (where it was timed apart), measured and predicted, and the peak memory
(the model's figure includes its 10% allocator headroom; the measured one is PyTorch's peak of
allocated tensors). Then the median |predicted/measured − 1| per group.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gpu_full_finetune_steps import MODELS  # noqa: E402  (the configs the measurement built)
from perdollar import catalog as catalog_mod  # noqa: E402
from perdollar.predict.llm import parse_plan, predict_llm_training  # noqa: E402
from perdollar.workload.llm import load_llm_workload  # noqa: E402

BUILT_IN = {"llama-3.1-8b"}  # the others are asked as the config.json the measurement built


def architecture(name: str, folder: Path):  # type: ignore[no-untyped-def]
    if name in BUILT_IN:
        return load_llm_workload(name).architecture
    path = folder / f"{name}.json"
    path.write_text(json.dumps(MODELS[name]))
    return load_llm_workload(str(path)).architecture


def plan_token(row: dict[str, str]) -> str:
    head = "ddp" + ("+ac" if row["gradient_checkpointing"] == "True" else "")
    head += "+optimizer-in-backward" if row["optimizer_in_backward"] == "True" else ""
    return f"{head},mb{row['micro_batch']},hf,{row['optimizer']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="?", type=Path, default=HERE / "gpu_full_finetune_steps_h200.csv")
    parser.add_argument("--accelerator", default="H200-SXM-141GB")
    args = parser.parse_args()
    accelerator = catalog_mod.load().accelerators[args.accelerator]
    folder = Path(tempfile.mkdtemp(prefix="perdollar-check-"))
    errors: dict[str, list[float]] = {}
    print(
        "row | step ms measured, predicted, ratio | optimizer ms measured, predicted"
        " | peak GiB measured, predicted"
    )
    for row in csv.DictReader(args.csv.open()):
        if row["status"] != "ok":
            continue
        arch = architecture(row["model"], folder)
        plan = replace(parse_plan(plan_token(row)), micro_batch=int(row["micro_batch"]))
        batch = int(row["micro_batch"])
        predicted = predict_llm_training(
            arch, accelerator, gpus_per_node=1, nodes=1, plan=plan, seq_len=int(row["seq_len"]),
            global_batch=batch, precision=row["precision"],
        )  # fmt: skip
        step_ms, measured_ms = 1000 * predicted.step_time_s, float(row["median_ms"])
        optimizer_ms = 1000 * predicted.breakdown_s.get("optimizer", 0.0)
        measured_optimizer = f"{float(row['optimizer_ms']):7.1f}" if row["optimizer_ms"] else "      -"
        label = f"{row['model']:<12} {row['precision']:<8} {row['optimizer']:<10} {plan.token():<44}"
        print(f"  {label} {measured_ms:7.1f} {step_ms:7.1f} {step_ms / measured_ms:5.2f}x |"
              f" {measured_optimizer} {optimizer_ms:7.1f} | {float(row['peak_memory_gib']):6.1f}"
              f" {predicted.memory_per_gpu_gib:6.1f}")  # fmt: skip
        group = f"{row['precision']}, {row['optimizer']}"
        errors.setdefault(group, []).append(abs(step_ms / measured_ms - 1))
        errors.setdefault("all steps", []).append(abs(step_ms / measured_ms - 1))
        memory_error = abs(predicted.memory_per_gpu_gib / float(row["peak_memory_gib"]) - 1)
        errors.setdefault("peak memory", []).append(memory_error)
        if row["optimizer_ms"]:
            errors.setdefault(f"optimizer step alone, {row['optimizer']}", []).append(
                abs(optimizer_ms / float(row["optimizer_ms"]) - 1)
            )
    print("\nmedian |predicted/measured − 1| (rows):")
    for group, values in errors.items():
        print(f"  {group:<36} {100 * statistics.median(values):5.1f}%  ({len(values)})")


if __name__ == "__main__":
    main()
