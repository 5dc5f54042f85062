"""Time language-model steps on this machine's GPU: serving (prefill, decode) and fine-tuning.

    python3 benchmarks/gpu_llm_steps.py OUT_DIR                # on a GPU, everything (~5 min on an H200)
    python3 benchmarks/gpu_llm_steps.py OUT_DIR --tiny         # on a CPU: the same code on tiny models

Randomly initialised models built from their published configs (no weights downloaded):

- **serving, the `hf` engine**: Llama-3.1-8B in bf16 under plain `transformers` (SDPA attention,
  its default dynamic KV cache, no CUDA graphs): one prefill of `batch x prompt` tokens (only the
  last position's logits, as generation asks), and one decode step of `batch` sequences over a
  cache of `context` tokens (random keys and values), with the cache's concatenation included,
  since that is what `generate` pays every step;
- **fine-tuning, Hugging Face PEFT**: Llama-3.2-1B and Llama-3.1-8B, LoRA on every linear layer of
  the decoder at several ranks and sequence lengths (adapters in float32 as PEFT makes them,
  autocast to bf16 as the Trainer does, AdamW over the adapters), full fine-tuning of the 1B model
  beside it, and QLoRA (NF4, double quantisation, bf16 compute) where `bitsandbytes` imports.

Each point is timed with CUDA events after a warm-up; the median and the 10th/90th percentiles of
the repeats are written. A point that runs out of memory or fails is a row with its status. The
run keeps to a time budget per section and marks what it had no time for as `skipped`.
Written to OUT_DIR: `llm_serving_steps.csv`, `lora_steps.csv`, `machine.json`.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

LLAMA_31_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
    "hidden_act": "silu", "head_dim": 128,
}  # fmt: skip
LLAMA_32_1B: dict[str, Any] = {
    **LLAMA_31_8B, "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
    "num_key_value_heads": 8, "head_dim": 64, "tie_word_embeddings": True,
}  # fmt: skip
TINY: dict[str, Any] = {
    **LLAMA_31_8B, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
}  # fmt: skip

SERVING_COLUMNS = [
    "gpu", "engine", "model", "precision", "kv_precision", "attention", "cache", "phase", "batch",
    "context_tokens", "new_tokens_per_sequence", "median_ms", "p10_ms", "p90_ms", "repeats",
    "tokens_per_s", "peak_memory_gib", "status", "torch", "transformers",
]  # fmt: skip
LORA_COLUMNS = [
    "gpu", "framework", "model", "finetune", "rank", "alpha", "dropout", "target_modules",
    "adapter_dtype", "base_dtype", "seq_len", "micro_batch", "gradient_checkpointing",
    "trainable_params", "total_params", "median_ms", "p10_ms", "p90_ms", "repeats", "tokens_per_s",
    "peak_memory_gib", "status", "torch", "transformers", "peft", "bitsandbytes",
]  # fmt: skip
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class Budget:
    """Seconds left for a section; the points it cannot reach are recorded as skipped."""

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        return self.ends - time.monotonic()


def versions() -> dict[str, str]:
    import transformers

    found = {"torch": torch.__version__, "transformers": transformers.__version__}
    for name in ("peft", "bitsandbytes"):
        try:
            found[name] = __import__(name).__version__
        except Exception as error:  # a missing or broken package is a fact to record
            found[name] = f"unavailable: {type(error).__name__}"
    return found


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def timed(run: Callable[[], Any], device: torch.device, repeats: int, seconds: float) -> list[float]:
    """Milliseconds of `run`, one warm-up first; stop early once `seconds` are spent (at least 3)."""
    run()
    sync(device)
    times: list[float] = []
    started = time.monotonic()
    while len(times) < repeats and (len(times) < 3 or time.monotonic() - started < seconds):
        if device.type == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            run()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            run()
            times.append((time.perf_counter() - t0) * 1000)
    return times


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def spread(times: list[float]) -> dict[str, Any]:
    ordered = sorted(times)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {
        "median_ms": statistics.median(ordered),
        "p10_ms": at(0.1),
        "p90_ms": at(0.9),
        "repeats": len(times),
    }


def peak_gib(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def failure(error: BaseException) -> str:
    if isinstance(error, torch.OutOfMemoryError):
        return "out-of-memory"
    return f"error: {type(error).__name__}: {str(error).splitlines()[0][:160] if str(error) else ''}"


def build_model(config: dict[str, Any], device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM, LlamaConfig

    hf_config = LlamaConfig(**{k: v for k, v in config.items() if k not in ("architectures", "model_type")})
    hf_config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        try:
            model = AutoModelForCausalLM.from_config(hf_config, dtype=dtype, attn_implementation="sdpa")
        except TypeError:  # transformers before 4.56 names it torch_dtype
            model = AutoModelForCausalLM.from_config(hf_config, torch_dtype=dtype, attn_implementation="sdpa")
    return model.to(device)


def random_cache(model: torch.nn.Module, config: dict[str, Any], batch: int, context: int) -> Any:
    from transformers import DynamicCache

    try:
        cache = DynamicCache(config=model.config)
    except TypeError:
        cache = DynamicCache()
    parameter = next(model.parameters())
    shape = (batch, config["num_key_value_heads"], context, config["head_dim"])
    for layer in range(config["num_hidden_layers"]):
        keys = torch.randn(shape, device=parameter.device, dtype=parameter.dtype)
        cache.update(keys, torch.randn_like(keys), layer)
    return cache


def serving(out: Path, device: torch.device, config: dict[str, Any], model_name: str, grid: dict,
            seconds: float, found: dict[str, str]) -> None:  # fmt: skip
    budget = Budget(seconds)
    rows: list[dict[str, Any]] = []
    precision = "bf16" if device.type == "cuda" else "fp32"
    base = {"gpu": device_name(device), "engine": "hf", "model": model_name, "precision": precision,
            "kv_precision": precision, "attention": "sdpa", "cache": "dynamic",
            "torch": found["torch"], "transformers": found["transformers"]}  # fmt: skip
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = build_model(config, device, dtype).eval()
    vocab = config["vocab_size"]
    kv_bytes_per_token = (
        2 * config["num_hidden_layers"] * config["num_key_value_heads"] * config["head_dim"] * 2
    )
    for batch, prompt in grid["prefill"]:
        row = {**base, "phase": "prefill", "batch": batch, "context_tokens": prompt,
               "new_tokens_per_sequence": prompt}  # fmt: skip
        if budget.left() < 5:
            rows.append({**row, "status": "skipped (time budget)"})
            continue
        reset_peak(device)
        try:
            ids = torch.randint(0, vocab, (batch, prompt), device=device)

            def prefill(ids: torch.Tensor = ids) -> None:
                with torch.inference_mode():
                    model(input_ids=ids, use_cache=True, logits_to_keep=1)

            times = timed(prefill, device, repeats=8, seconds=min(4.0, budget.left() / 4))
            stats = spread(times)
            row |= stats | {"tokens_per_s": batch * prompt / (stats["median_ms"] / 1000), "status": "ok"}
        except Exception as error:
            row["status"] = failure(error)
        row["peak_memory_gib"] = peak_gib(device)
        rows.append(row)
        print(f"prefill b={batch} L={prompt}: {row.get('median_ms', '-')} ms {row['status']}", flush=True)
        write(out / "llm_serving_steps.csv", SERVING_COLUMNS, rows)
    free_bytes = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else 8 * 2**30
    for batch, context in grid["decode"]:
        row = {
            **base,
            "phase": "decode",
            "batch": batch,
            "context_tokens": context,
            "new_tokens_per_sequence": 1,
        }
        if budget.left() < 3:
            rows.append({**row, "status": "skipped (time budget)"})
            continue
        if batch * (context + 16) * kv_bytes_per_token > 0.8 * free_bytes:
            rows.append({**row, "status": "skipped (cache over 80% of free memory)"})
            continue
        reset_peak(device)
        try:
            ids = torch.randint(0, vocab, (batch, 1), device=device)
            positions = torch.full((batch, 1), context, device=device)
            cache = random_cache(model, config, batch, context)

            def decode(
                ids: torch.Tensor = ids, positions: torch.Tensor = positions, cache: Any = cache
            ) -> None:
                with torch.inference_mode():
                    model(input_ids=ids, position_ids=positions, past_key_values=cache, use_cache=True)
                cache.crop(-1)  # the next repeat decodes over the same context

            times = timed(decode, device, repeats=12, seconds=min(3.0, budget.left() / 4))
            stats = spread(times)
            row |= stats | {"tokens_per_s": batch / (stats["median_ms"] / 1000), "status": "ok"}
            del cache
        except Exception as error:
            row["status"] = failure(error)
        row["peak_memory_gib"] = peak_gib(device)
        rows.append(row)
        print(f"decode b={batch} ctx={context}: {row.get('median_ms', '-')} ms {row['status']}", flush=True)
        write(out / "llm_serving_steps.csv", SERVING_COLUMNS, rows)
    reset_peak(device)


def quantise_to_nf4(model: torch.nn.Module) -> None:
    """Replace every decoder linear layer by bitsandbytes' NF4 layer, as QLoRA loads a model."""
    import bitsandbytes as bnb

    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear) and child_name in LORA_TARGETS:
                replacement = bnb.nn.Linear4bit(
                    child.in_features, child.out_features, bias=False, compute_dtype=torch.bfloat16,
                    compress_statistics=True, quant_type="nf4",
                )  # fmt: skip
                weight = child.weight.data.to("cpu")
                replacement.weight = bnb.nn.Params4bit(
                    weight, requires_grad=False, compress_statistics=True, quant_type="nf4"
                )
                setattr(module, child_name, replacement.to(child.weight.device))
                del child
        _ = name


def finetune_point(device: torch.device, config: dict[str, Any], point: dict[str, Any], seconds: float,
                   found: dict[str, str],
                   after: Callable[[Callable[[], Any], float], dict[str, Any]] | None = None,
                   ) -> dict[str, Any]:  # fmt: skip
    from peft import LoraConfig, get_peft_model

    mode, rank, seq_len, batch = point["finetune"], point.get("rank"), point["seq_len"], point["micro_batch"]
    checkpointing = point.get("gradient_checkpointing", False)
    cuda = device.type == "cuda"
    row: dict[str, Any] = {
        "framework": ("hf-peft" if mode != "full" else "hf") + ("+compile" if point.get("compile") else ""),
        "finetune": mode, "rank": rank,
        "alpha": 2 * rank if rank else None, "dropout": 0.05 if rank else None,
        "target_modules": "+".join(LORA_TARGETS) if rank else "all", "seq_len": seq_len,
        "micro_batch": batch, "gradient_checkpointing": checkpointing,
        "base_dtype": "nf4" if mode == "qlora" else "bf16",
        "adapter_dtype": "fp32" if rank else None,
    }  # fmt: skip
    reset_peak(device)
    try:
        dtype = torch.bfloat16 if cuda else torch.float32
        model = build_model(config, device, dtype if mode != "full" else torch.float32)
        if mode == "qlora":
            quantise_to_nf4(model)
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.enable_input_require_grads()
        if rank:
            lora = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.05, target_modules=LORA_TARGETS,
                              task_type="CAUSAL_LM")  # fmt: skip
            model = get_peft_model(model, lora)
        model.train()
        forward = torch.compile(model) if point.get("compile") else model
        trainable = [p for p in model.parameters() if p.requires_grad]
        row["trainable_params"] = sum(p.numel() for p in trainable)
        row["total_params"] = sum(p.numel() for p in model.parameters())
        optimizer = torch.optim.AdamW(trainable, lr=1e-5, fused=cuda)
        ids = torch.randint(0, config["vocab_size"], (batch, seq_len), device=device)

        def step() -> None:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
                loss = forward(input_ids=ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        step()  # the optimizer's state is made on the first step; not timed
        stats = spread(timed(step, device, repeats=10, seconds=seconds))
        row |= stats | {"tokens_per_s": batch * seq_len / (stats["median_ms"] / 1000), "status": "ok"}
        if after is not None:
            row |= after(step, stats["median_ms"])
    except Exception as error:
        row["status"] = failure(error)
    row["peak_memory_gib"] = peak_gib(device)
    return row


def finetuning(out: Path, device: torch.device, models: dict[str, dict], points: list[dict], seconds: float,
               found: dict[str, str]) -> None:  # fmt: skip
    budget = Budget(seconds)
    rows: list[dict[str, Any]] = []
    for point in points:
        base = {"gpu": device_name(device), "model": point["model"], **{k: found[k] for k in
                ("torch", "transformers", "peft", "bitsandbytes")}}  # fmt: skip
        if budget.left() < 8:
            rows.append({**base, **point, "status": "skipped (time budget)"})
            continue
        if point["finetune"] == "qlora" and found["bitsandbytes"].startswith("unavailable"):
            rows.append({**base, **point, "status": f"skipped (bitsandbytes {found['bitsandbytes']})"})
            continue
        row = base | finetune_point(device, models[point["model"]], point, min(4.0, budget.left() / 3), found)
        rows.append(row)
        label = f"{point['model']} {point['finetune']} r={point.get('rank')} L={point['seq_len']}"
        print(f"{label} b={point['micro_batch']}: {row.get('median_ms', '-')} ms {row['status']}", flush=True)
        write(out / "lora_steps.csv", LORA_COLUMNS, rows)


def write(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else v)
                             for k, v in row.items()})  # fmt: skip


def serving_grid(tiny: bool) -> dict[str, list[tuple[int, int]]]:
    if tiny:
        return {"prefill": [(1, 16), (4, 64)], "decode": [(1, 16), (4, 64)]}
    prefill = [(b, p) for b in (1, 4, 16, 64, 256) for p in (128, 512, 2048, 8192) if b * p <= 131072]
    decode = [(b, c) for b in (1, 8, 32, 64, 128, 256) for c in (128, 512, 2048, 8192) if b * c <= 524288]
    return {"prefill": prefill, "decode": decode}


def finetune_points(tiny: bool) -> list[dict[str, Any]]:
    if tiny:
        return [{"model": "tiny", "finetune": "lora", "rank": 8, "seq_len": 32, "micro_batch": 2},
                {"model": "tiny", "finetune": "full", "seq_len": 32, "micro_batch": 2}]  # fmt: skip
    small, large = "llama-3.2-1b", "llama-3.1-8b"
    points = [
        {"model": small, "finetune": "lora", "rank": r, "seq_len": 2048, "micro_batch": 4}
        for r in (8, 16, 64, 256)
    ]
    points += [{"model": small, "finetune": "lora", "rank": 16, "seq_len": s, "micro_batch": b}
               for s, b in ((512, 16), (1024, 8), (4096, 2), (512, 1), (2048, 1))]  # fmt: skip
    points += [{"model": small, "finetune": "full", "seq_len": 2048, "micro_batch": 4}]
    points += [
        {"model": large, "finetune": "lora", "rank": 16, "seq_len": 2048, "micro_batch": b} for b in (1, 4)
    ]
    points += [{"model": large, "finetune": "lora", "rank": 64, "seq_len": 2048, "micro_batch": 4}]
    points += [{"model": large, "finetune": "lora", "rank": 16, "seq_len": 4096, "micro_batch": 4,
                "gradient_checkpointing": True}]  # fmt: skip
    points += [
        {"model": large, "finetune": "qlora", "rank": 16, "seq_len": 2048, "micro_batch": b} for b in (1, 4)
    ]
    points += [{"model": small, "finetune": "qlora", "rank": 16, "seq_len": 2048, "micro_batch": 4}]
    return points


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--tiny", action="store_true", help="tiny models on whatever device is here (a check)"
    )
    parser.add_argument("--serving-seconds", type=float, default=150)
    parser.add_argument("--finetune-seconds", type=float, default=170)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    found = versions()
    machine = {"gpu": device_name(device), **found}
    if device.type == "cuda":
        machine["memory_gib"] = torch.cuda.get_device_properties(device).total_memory / 2**30
    (args.out / "machine.json").write_text(json.dumps(machine, indent=2))
    print(json.dumps(machine), flush=True)
    serving_config = TINY if args.tiny else LLAMA_31_8B
    serving_name = "tiny" if args.tiny else "llama-3.1-8b"
    grid = serving_grid(args.tiny)
    serving(args.out, device, serving_config, serving_name, grid, args.serving_seconds, found)
    models = {"tiny": TINY, "llama-3.2-1b": LLAMA_32_1B, "llama-3.1-8b": LLAMA_31_8B}
    finetuning(args.out, device, models, finetune_points(args.tiny), args.finetune_seconds, found)
    for name in ("llm_serving_steps.csv", "lora_steps.csv"):
        print(f"--- {name}")
        print((args.out / name).read_text())
    sys.exit(0)


if __name__ == "__main__":
    main()
