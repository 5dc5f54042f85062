"""Time LoRA and full fine-tuning steps eagerly and under ``torch.compile``, with the GPU's power.

    python3 benchmarks/gpu_compiled_lora_steps.py OUT_DIR          # on a GPU (~5 min on an H200)
    python3 benchmarks/gpu_compiled_lora_steps.py OUT_DIR --tiny   # on a CPU: tiny model, no compile

Fine-tuning frameworks differ most in whether they compile the model (torchtune does by default;
a plain PEFT script does not). Each point is one Hugging Face PEFT step of a randomly initialised
Llama (forward, backward, fused AdamW over the trainable parameters), timed as
``gpu_llm_steps.py`` times it, then run for about a second while the board's energy counter runs.
Written: ``compiled_lora_steps.csv`` (the columns of ``gpu_llm_steps.py``'s fine-tuning rows, plus
mean power and joules per step).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

import torch

from gpu_graph_steps import PowerMeter
from gpu_llm_steps import LLAMA_31_8B, LLAMA_32_1B, LORA_COLUMNS, TINY, finetune_point, versions

COLUMNS = [*LORA_COLUMNS, "mean_power_w", "joules_per_step"]


def points(tiny: bool) -> list[dict[str, Any]]:
    if tiny:
        return [{"model": "tiny", "finetune": "lora", "rank": 8, "seq_len": 32, "micro_batch": 2}]
    rows = []
    for model, batch in (("llama-3.2-1b", 4), ("llama-3.1-8b", 4)):
        for compiled in (False, True):
            rows.append({"model": model, "finetune": "lora", "rank": 16, "seq_len": 2048,
                         "micro_batch": batch, "compile": compiled})  # fmt: skip
    rows.append({"model": "llama-3.2-1b", "finetune": "full", "seq_len": 2048, "micro_batch": 4})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--tiny", action="store_true", help="tiny model on whatever device is here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    found = versions()
    meter = PowerMeter() if device.type == "cuda" else None

    def power(step: Any, median_ms: float) -> dict[str, Any]:
        if meter is None or meter.handle is None:
            return {}
        watts, joules, _ = meter.sustained(step, median_ms)
        return {"mean_power_w": round(watts, 1), "joules_per_step": round(joules, 3)}

    models = {"tiny": TINY, "llama-3.2-1b": LLAMA_32_1B, "llama-3.1-8b": LLAMA_31_8B}
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    rows = []
    for point in points(args.tiny):
        row = finetune_point(device, models[point["model"]], point, 20.0, found, after=power)
        row |= {"gpu": gpu, "model": point["model"], **{k: found.get(k) for k in found}}
        rows.append(row)
        print(json.dumps({k: row.get(k) for k in ("model", "framework", "finetune", "median_ms",
                                                  "mean_power_w", "status")}), flush=True)  # fmt: skip
    with (args.out / "compiled_lora_steps.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return 0 if any(row.get("status") == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
