"""Predict every step that `gpu_llm_steps.py` measured, and print prediction against measurement.

    python3 benchmarks/gpu_llm_steps_check.py                       # the H200 files in benchmarks/
    python3 benchmarks/gpu_llm_steps_check.py --serving S.csv --lora L.csv --instance p5en.48xlarge
    python3 benchmarks/gpu_llm_steps_check.py --serving '' --lora benchmarks/gpu_compiled_lora_steps_h200.csv

Each measured row is asked of `perdollar predict ... --json` as a user would ask it (spec basis:
the shipped fit, no calibration from these rows):
- a prefill row (batch b, prompt L) is the TTFT of a static batch of b prompts of L tokens;
- a decode row (batch b, context c) is the TPOT of b sequences whose prompt is c tokens;
- a fine-tuning row is one optimizer step of one GPU (data parallel over the instance's GPUs,
  micro-batch and sequence as measured, no accumulation), and its memory per GPU; a row run under
  `torch.compile` (framework ``…+compile``) is asked with ``--compile``.
The measurements ran under plain `transformers` (and PEFT), an engine and framework the shipped
model has no record of yet: the ratios say how far that stack sits from the model's assumption.
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
sys.path.insert(0, str(HERE))
from gpu_llm_steps import LLAMA_32_1B  # noqa: E402  (the config the measurement built)

# Models measured that perdollar has no built-in of: asked as the config.json a user would give.
CONFIG_FILES = {"llama-3.2-1b": LLAMA_32_1B}


def model_argument(name: str, folder: Path) -> str:
    if name not in CONFIG_FILES:
        return name
    path = folder / f"{name}.json"
    path.write_text(json.dumps(CONFIG_FILES[name]))
    return str(path)


def ask(arguments: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-m", "perdollar", "predict", *arguments, "--json"],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout)


def serving_rows(path: Path, accelerator: str) -> list[tuple[str, float, float]]:
    compared = []
    for row in csv.DictReader(path.open()):
        if row["status"] != "ok":
            continue
        batch, context = int(row["batch"]), int(row["context_tokens"])
        output = 1 if row["phase"] == "prefill" else 2
        answer = ask([row["model"], "--inference", "--accelerator", accelerator, "--gpus", "1",
                      "--batch", str(batch), "--input-tokens", str(context), "--output-tokens", str(output),
                      "--precision", "bf16"])  # fmt: skip
        key = "ttft_ms" if row["phase"] == "prefill" else "tpot_ms"
        label = f"{row['phase']:<7} b={batch:<3} ctx={context:<5}"
        compared.append((label, float(row["median_ms"]), answer.get(key, float("nan"))))
    return compared


def lora_rows(path: Path, instance: str) -> list[tuple[str, float, float, float, float]]:
    compared = []
    folder = Path(tempfile.mkdtemp(prefix="perdollar-check-"))
    for row in csv.DictReader(path.open()):
        if row["status"] != "ok":
            continue
        mode, batch, seq = row["finetune"], int(row["micro_batch"]), int(row["seq_len"])
        plan = "ddp+ac" if row["gradient_checkpointing"] == "True" else "ddp"
        arguments = [model_argument(row["model"], folder), "--instance", instance, "--seq-len", str(seq),
                     "--micro-batch", str(batch), "--plan", plan, "--finetune", mode,
                     "--global-batch", str(8 * batch)]  # fmt: skip
        if row["rank"]:
            arguments += ["--lora-rank", row["rank"]]
        compiled = row["framework"].endswith("+compile")
        if compiled:  # the step ran under torch.compile
            arguments.append("--compile")
        answer = ask(arguments)
        if "error" in answer:
            print(f"  {row['model']} {mode}: {answer['error']}")
        label = f"{row['model']:<12} {mode:<5} r={row['rank'] or '-':<3} L={seq:<4} b={batch}"
        label += " compiled" if compiled else ""
        step_ms = 1000 * answer.get("step_time_s", float("nan"))
        memory_gib = answer.get("memory_per_gpu_gib", float("nan"))
        compared.append((label, float(row["median_ms"]), step_ms, float(row["peak_memory_gib"]), memory_gib))
    return compared


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--serving", type=Path, default=HERE / "gpu_llm_serving_steps_h200.csv")
    parser.add_argument("--lora", type=Path, default=HERE / "gpu_lora_steps_h200.csv")
    parser.add_argument("--accelerator", default="H200")
    parser.add_argument("--instance", default="p5en.48xlarge")
    args = parser.parse_args()
    print("serving (hf engine): measured ms | predicted ms | predicted / measured")
    ratios = {"prefill": [], "decode": []}
    serving = serving_rows(args.serving, args.accelerator) if str(args.serving) not in ("", ".") else []
    for label, measured, predicted in serving:
        ratio = predicted / measured
        ratios[label.split()[0]].append(ratio)
        print(f"  {label}  {measured:9.1f}  {predicted:9.1f}  {ratio:5.2f}x")
    for phase, values in ratios.items():
        if values:
            print(
                f"  {phase}: median predicted/measured {statistics.median(values):.2f}x, {len(values)} rows"
            )
    print("fine-tuning (hf / peft): step ms measured | predicted | ratio ; peak GiB measured | predicted")
    step_ratios: dict[str, list[float]] = {}
    for label, measured, predicted, memory, predicted_memory in lora_rows(args.lora, args.instance):
        step_ratios.setdefault(label.split()[1], []).append(predicted / measured)
        print(f"  {label}  {measured:8.1f}  {predicted:8.1f}  {predicted / measured:5.2f}x ;"
              f"  {memory:6.1f}  {predicted_memory:6.1f}")  # fmt: skip
    for mode, values in step_ratios.items():
        print(
            f"  {mode}: median predicted/measured step {statistics.median(values):.2f}x, {len(values)} rows"
        )


if __name__ == "__main__":
    main()
