"""Predict every step that `gpu_graph_steps.py` measured, and print prediction against measurement.

    python3 benchmarks/gpu_graph_steps_check.py                    # the H200 file in benchmarks/
    python3 benchmarks/gpu_graph_steps_check.py --steps S.csv --accelerator H100

The measured steps ran as an engine runs them (decode captured in a CUDA graph, no scheduler), so
each is compared with the GPU part of the prediction: `perdollar predict ... --engine vllm --json`
less the engine's per-step host time (`breakdown_ms.overhead`). A decode row (batch b, context c)
is the TPOT of b sequences whose prompt is c tokens; a prefill row is the TTFT of a static batch
of b prompts. Spec basis: the shipped fit, no calibration from these rows. The power columns are
summarised beside: mean board power by phase and how it rises with the batch.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
QWEN_25_32B = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 5120,
    "intermediate_size": 27648,
    "num_hidden_layers": 64,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "vocab_size": 152064,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}  # fmt: skip (Qwen2.5-32B's published config.json, the fields the measurement built)


def model_argument(name: str, folder: Path) -> str:
    if name != "qwen2.5-32b":
        return name
    path = folder / f"{name}.json"
    path.write_text(json.dumps(QWEN_25_32B))
    return str(path)


def predicted_ms(row: dict[str, str], accelerator: str, folder: Path) -> float:
    batch, context = row["batch"], row["context_tokens"]
    arguments = [model_argument(row["model"], folder), "--inference", "--accelerator", accelerator,
                 "--gpus", "1", "--batch", batch, "--input-tokens", context, "--output-tokens", "2",
                 "--precision", "bf16", "--engine", "vllm", "--json"]  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "perdollar", "predict", *arguments],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        print(f"  {row['model']} {row['phase']} b={batch}: {done.stderr.strip().splitlines()[-1]}")
        return float("nan")
    answer = json.loads(done.stdout)
    overhead = float(answer.get("breakdown_ms", {}).get("overhead", 0.0))
    key = "ttft_ms" if row["phase"] == "prefill" else "tpot_ms"
    return float(answer[key]) - overhead


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=Path, default=HERE / "gpu_graph_steps_h200.csv")
    parser.add_argument("--accelerator", default="H200")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="perdollar-graph-check-"))
    rows = [row for row in csv.DictReader(args.steps.open()) if row["status"] == "ok"]
    errors: dict[tuple[str, str], list[float]] = {}
    print(f"{'model':<15} {'step':<28} {'measured ms':>11} {'predicted':>9} {'ratio':>6} {'power W':>7}")
    for row in rows:
        measured = float(row["median_ms"])
        predicted = predicted_ms(row, args.accelerator, folder)
        ratio = predicted / measured
        step = f"{row['phase']} b={row['batch']} ctx={row['context_tokens']}"
        print(f"{row['model']:<15} {step:<28} {measured:>11.2f} {predicted:>9.2f} {ratio:>6.2f} "
              f"{row['mean_power_w'] or '-':>7}")  # fmt: skip
        if ratio == ratio:
            errors.setdefault((row["model"], row["phase"]), []).append(abs(ratio - 1.0))
    print("\nmedian |error| by model and phase:")
    for (model, phase), values in sorted(errors.items()):
        print(f"  {model:<15} {phase:<8} {100 * statistics.median(values):5.1f}%  ({len(values)} steps)")
    every = [value for values in errors.values() for value in values]
    print(f"  all {len(every)} steps: median {100 * statistics.median(every):.1f}%")
    powers = {}
    for row in rows:
        if row["mean_power_w"]:
            powers.setdefault(row["phase"], []).append(float(row["mean_power_w"]))
    for phase, values in sorted(powers.items()):
        print(f"mean board power, {phase}: median {statistics.median(values):.0f} W "
              f"(range {min(values):.0f}-{max(values):.0f} W, {len(values)} steps)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
