"""Accuracy of the fine-tuning prediction (full, LoRA, QLoRA) under the framework each run used.

    python3 benchmarks/llm_finetuning_accuracy.py

Three sources, each predicted at its own plan and framework (spec basis, the shipped fit):
- ``published_llm_finetuning.csv``: torchtune's published memory-and-speed table (1 and 8 GPUs),
  each row asked compiled where its ``compile`` column says it ran under torch.compile, and with
  the optimizer its ``optimizer`` column names (the 8B full recipe: bitsandbytes' paged 8-bit AdamW);
- ``published_llm_training.csv``: NeMo 24.07's LoRA rows (8 H100s);
- ``gpu_lora_steps_{h200,h100}.csv``: PEFT steps measured on one H200 and one H100 (Hugging Face
  Trainer's stack: autocast, float32 adapters, dropout 0.05).
No parameter is fitted on the first two; the one fitted constant of the frameworks
(``HOST_SECONDS_PER_OPERATOR``) comes from one row of the third (Llama-3.2-1B, one sequence of 512
tokens), so leaving each source out changes nothing but that row, which is marked. Prints the
absolute percentage error of tokens/s by source, by mode and by framework, and peak memory where
the source gives it.
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gpu_llm_steps import LLAMA_32_1B  # noqa: E402  (the config the measurement built)
from llm_training_rows import load_runs  # noqa: E402
from perdollar import catalog as catalog_mod  # noqa: E402
from perdollar.predict.llm import parse_plan, predict_llm_training  # noqa: E402
from perdollar.predict.llm.frameworks import framework_choice  # noqa: E402
from perdollar.workload.llm import load_llm_workload  # noqa: E402

FITTED_ROW = ("llama-3.2-1b", "lora", 512, 1)  # what HOST_SECONDS_PER_OPERATOR was fitted on


def _predict(arch, accelerator, plan, *, gpus_per_node, nodes, seq_len, global_batch, **extra):  # type: ignore[no-untyped-def]
    return predict_llm_training(
        arch, accelerator, gpus_per_node=gpus_per_node, nodes=nodes, plan=plan, seq_len=seq_len,
        global_batch=global_batch, precision=extra.get("precision", "amp-bf16"),
        network_gbps=extra.get("network_gbps"),
        efa_interfaces=extra.get("efa_interfaces"), attention_kernel=extra.get("attention_kernel", "flash2"),
    )  # fmt: skip


def published_rows(catalog) -> list[dict]:  # type: ignore[no-untyped-def]
    rows = []
    for row in csv.DictReader((HERE / "published_llm_finetuning.csv").open()):
        mode, rank = row["finetune"], int(row["lora_rank"] or 16)
        gpus, per_node = int(row["gpu_count"]), int(row["gpus_per_node"])
        batch = int(row["micro_batch"]) * gpus // 1 * int(row["gradient_accumulation"])
        arch = load_llm_workload(row["model"]).architecture
        plan = replace(
            parse_plan(row["plan"]), finetune=mode, lora_rank=rank, micro_batch=int(row["micro_batch"]),
            framework=framework_choice(row["framework"], row["compile"] == "1" or None),
            optimizer=row["optimizer"],
        )  # fmt: skip
        p = _predict(arch, catalog.accelerators[row["gpu"]], plan, gpus_per_node=per_node,
                     nodes=gpus // per_node, seq_len=int(row["seq_len"]), global_batch=batch,
                     precision=row.get("precision", "amp-bf16"))  # fmt: skip
        rows.append({
            "source": "torchtune README", "mode": mode, "framework": row["framework"],
            "label": f"{row['model']} {mode} {gpus}x{row['gpu']}",
            "published": float(row["tokens_per_second"]),
            "predicted": p.tokens_per_second, "memory": float(row["peak_memory_gib"] or "nan"),
            "predicted_memory": p.memory_per_gpu_gib, "fitted": False,
            # the share of the GPUs' dense peak the published figure needs, in the prediction's MFU
            # convention (model FLOPs a token; a checkpointed forward's recomputation not counted)
            "implied_mfu": p.mfu * float(row["tokens_per_second"]) / p.tokens_per_second,
        })  # fmt: skip
    return rows


def nemo_rows() -> list[dict]:
    runs, _ = load_runs(HERE / "published_llm_training.csv")
    rows = []
    for run in runs:
        if run.finetune == "full":
            continue
        p = _predict(
            run.architecture, run.accelerator, run.plan(), gpus_per_node=run.gpus_per_node, nodes=run.nodes,
            seq_len=run.seq_len, global_batch=run.global_batch, network_gbps=run.network_gbps_per_node,
            efa_interfaces=run.gpus_per_node if run.rdma else None, attention_kernel=run.attention_kernel,
            precision=run.precision,
        )  # fmt: skip
        rows.append({
            "source": "NeMo 24.07", "mode": run.finetune, "framework": run.framework,
            "label": f"{run.model} {run.finetune} {run.gpu_count}x{run.accelerator.key} {run.plan().token()}",
            "published": run.tokens_per_second, "predicted": p.tokens_per_second, "memory": float("nan"),
            "predicted_memory": p.memory_per_gpu_gib, "fitted": False,
        })  # fmt: skip
    return rows


def measured_rows(catalog, path: Path, instance: str) -> list[dict]:  # type: ignore[no-untyped-def]
    config = Path(tempfile.mkdtemp()) / "llama-3.2-1b.json"
    config.write_text(json.dumps(LLAMA_32_1B))
    accelerator = catalog.accelerators[catalog.instance(instance).accelerator_key]
    rows = []
    for row in csv.DictReader(path.open()):
        if row["status"] != "ok":
            continue
        mode, batch, seq = row["finetune"], int(row["micro_batch"]), int(row["seq_len"])
        spec = str(config) if row["model"] == "llama-3.2-1b" else row["model"]
        arch = load_llm_workload(spec).architecture
        # every measured row ran plain transformers (and PEFT), full fine-tuning included
        plan = replace(
            parse_plan("ddp+ac" if row["gradient_checkpointing"] == "True" else "ddp"), finetune=mode,
            lora_rank=int(row["rank"] or 16), micro_batch=batch, framework="hf",
        )  # fmt: skip
        p = _predict(arch, accelerator, plan, gpus_per_node=1, nodes=1, seq_len=seq, global_batch=batch)
        framework = plan.resolved_framework.name
        rows.append({
            "source": f"measured PEFT ({accelerator.key})", "mode": mode, "framework": framework,
            "label": f"{row['model']} {mode} r={row['rank'] or '-'} L={seq} b={batch}",
            "published": batch * seq / (float(row["median_ms"]) / 1000), "predicted": p.tokens_per_second,
            "memory": float(row["peak_memory_gib"]), "predicted_memory": p.memory_per_gpu_gib,
            "fitted": (row["model"], mode, seq, batch) == FITTED_ROW,
        })  # fmt: skip
    return rows


def summary(title: str, rows: list[dict], key: str) -> None:
    print(f"\nabsolute error of tokens/s by {title} (median, max, rows; the fitted row left out):")
    groups: dict[str, list[float]] = {}
    for row in rows:
        if not row["fitted"]:
            error = abs(row["predicted"] - row["published"]) / row["published"]
            groups.setdefault(row[key], []).append(error)
    for name, errors in sorted(groups.items()):
        median, worst = 100 * statistics.median(errors), 100 * max(errors)
        print(f"  {name:<34} {median:6.1f}%  {worst:6.1f}%  {len(errors)}")


def main() -> None:
    catalog = catalog_mod.load()
    rows = published_rows(catalog) + nemo_rows()
    rows += measured_rows(catalog, HERE / "gpu_lora_steps_h200.csv", "p5en.48xlarge")
    rows += measured_rows(catalog, HERE / "gpu_lora_steps_h100.csv", "p5.48xlarge")
    print("run | published or measured tokens/s | predicted | ratio | peak GiB: source, predicted")
    for row in rows:
        mark = " (fitted)" if row["fitted"] else ""
        ratio = row["predicted"] / row["published"]
        print(f"  {row['source']:<24} {row['label']:<58} {row['published']:9.0f} {row['predicted']:9.0f} "
              f"{ratio:5.2f}x  {row['memory']:5.1f} {row['predicted_memory']:5.1f}{mark}")  # fmt: skip
    summary("source", rows, "source")
    summary("mode", rows, "mode")
    summary("framework", rows, "framework")
    memory = [
        abs(r["predicted_memory"] - r["memory"]) / r["memory"] for r in rows if r["memory"] == r["memory"]
    ]
    median = 100 * statistics.median(memory)
    print(f"\npeak memory, {len(memory)} rows with a figure: median error {median:.1f}%")
    print("\nthe dense-peak share each published row needs (MFU, model FLOPs; recomputation not counted):")
    for row in rows:
        if "implied_mfu" in row:
            print(f"  {row['label']:<58} {100 * row['implied_mfu']:5.1f}%")


if __name__ == "__main__":
    main()
