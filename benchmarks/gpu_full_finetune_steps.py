"""Time full fine-tuning steps under mixed and pure bf16, with the optimizer stepped after or inside
the backward.

    python3 benchmarks/gpu_full_finetune_steps.py OUT_DIR          # on a GPU (~3 min on an H200)
    python3 benchmarks/gpu_full_finetune_steps.py OUT_DIR --tiny   # on a CPU: a tiny model

Full fine-tuning recipes differ in two choices the memory and step models must follow:
- **where the master weights live**: mixed precision keeps float32 parameters (and float32 AdamW
  moments) and computes in bf16 under autocast; pure bf16 keeps the parameters and the moments in
  bf16 and has no master copy (torchtune's recipes train this way);
- **when the optimizer steps**: after the whole backward (every gradient held at once), or inside it,
  each parameter's update run as soon as its gradient is complete and the gradient freed at once
  (``register_post_accumulate_grad_hook``, torchtune's ``optimizer_in_bwd``): at most a few
  gradients are alive at any time.
Each point is one step of a randomly initialised Llama (Hugging Face transformers, SDPA attention),
with fused PyTorch AdamW or, where bitsandbytes imports, its ``AdamW8bit`` (block-wise 8-bit moments;
the paged variant is left out: making it page would mean oversubscribing the GPU's managed memory).
For the plain schedule the forward-and-backward and the optimizer step are also
timed apart. ``resident_gib`` is what stays allocated between steps (weights, moments and, when
the optimizer steps after the backward, nothing else: gradients are set to None).
Written: ``full_finetune_steps.csv``.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from gpu_llm_steps import (
    LLAMA_31_8B,
    LLAMA_32_1B,
    TINY,
    build_model,
    failure,
    peak_gib,
    reset_peak,
    spread,
    sync,
    timed,
    versions,
    write,
)

LLAMA_32_3B: dict[str, Any] = {
    **LLAMA_31_8B, "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
    "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128, "tie_word_embeddings": True,
}  # fmt: skip
MODELS = {"tiny": TINY, "llama-3.2-1b": LLAMA_32_1B, "llama-3.2-3b": LLAMA_32_3B, "llama-3.1-8b": LLAMA_31_8B}
COLUMNS = [
    "gpu", "model", "precision", "optimizer", "optimizer_in_backward", "seq_len", "micro_batch",
    "gradient_checkpointing", "params", "median_ms", "p10_ms", "p90_ms", "repeats",
    "forward_backward_ms", "optimizer_ms", "tokens_per_s", "resident_gib", "peak_memory_gib",
    "status", "parts_status", "torch", "transformers", "bitsandbytes",
]  # fmt: skip


def points(tiny: bool) -> list[dict[str, Any]]:
    if tiny:
        return [{"model": "tiny", "precision": p, "in_backward": b, "seq_len": 32, "micro_batch": 2}
                for p in ("amp-bf16", "bf16") for b in (False, True)] + [
               {"model": "tiny", "precision": "bf16", "in_backward": True, "seq_len": 32, "micro_batch": 2,
                "optimizer": "adamw-8bit"}]  # fmt: skip
    rows = [
        {"model": "llama-3.2-1b", "precision": p, "in_backward": b, "seq_len": 2048, "micro_batch": 4}
        for p in ("amp-bf16", "bf16") for b in (False, True)
    ]  # fmt: skip
    rows += [
        {"model": "llama-3.2-3b", "precision": p, "in_backward": b, "seq_len": 2048, "micro_batch": 2}
        for p in ("amp-bf16", "bf16") for b in (False, True)
    ]  # fmt: skip
    eight_bit = {"optimizer": "adamw-8bit"}
    rows += [{**row, **eight_bit} for row in rows[:4]]
    large = {"model": "llama-3.1-8b", "seq_len": 2048, "micro_batch": 2, "gradient_checkpointing": True}
    # the points nearest the GPU's memory come last: an out-of-memory error can strand memory
    rows += [{**large, "precision": "bf16", "in_backward": b, **eight_bit} for b in (False, True)]
    rows += [{**large, "precision": "bf16", "in_backward": b} for b in (True, False)]
    rows += [{**large, "precision": "amp-bf16", "in_backward": b} for b in (True, False)]
    return rows


def optimizer_class(name: str, fused: bool) -> Callable[[list[torch.Tensor]], torch.optim.Optimizer]:
    if name == "adamw-8bit":
        import bitsandbytes

        return lambda params: bitsandbytes.optim.AdamW8bit(params, lr=1e-5)
    return lambda params: torch.optim.AdamW(params, lr=1e-5, fused=fused)


def optimizer_step(
    model: torch.nn.Module, in_backward: bool, make: Callable[[list[torch.Tensor]], torch.optim.Optimizer]
) -> tuple[Callable[[], None], torch.optim.Optimizer | None]:
    """The optimizer's part of a step (nothing left to do when it runs inside the backward), and the
    optimizer that steps after the backward."""
    params = [p for p in model.parameters() if p.requires_grad]
    if in_backward:
        per_param = {p: make([p]) for p in params}

        def step_now(param: torch.Tensor) -> None:
            per_param[param].step()
            per_param[param].zero_grad(set_to_none=True)

        hooks = [p.register_post_accumulate_grad_hook(step_now) for p in params]
        # the hooks live in the parameters' C++ side, out of the collector's sight: removed by hand
        model.remove_optimizer_hooks = lambda: [hook.remove() for hook in hooks]  # type: ignore[assignment]
        return (lambda: None), None
    optimizer = make(params)

    def step_after() -> None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step_after, optimizer


def measure(device: torch.device, point: dict[str, Any], seconds: float) -> dict[str, Any]:
    config = MODELS[point["model"]]
    cuda = device.type == "cuda"
    pure = point["precision"] == "bf16"
    batch, seq_len = point["micro_batch"], point["seq_len"]
    row: dict[str, Any] = {
        "model": point["model"], "precision": point["precision"],
        "optimizer": point.get("optimizer", "adamw"),
        "optimizer_in_backward": point["in_backward"], "seq_len": seq_len, "micro_batch": batch,
        "gradient_checkpointing": point.get("gradient_checkpointing", False),
    }  # fmt: skip
    free(device)
    before = torch.cuda.memory_allocated(device) / 2**30 if cuda else 0.0
    model = net = None
    try:
        model = net = build_model(config, device, torch.bfloat16 if pure else torch.float32)
        if row["gradient_checkpointing"]:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        row["params"] = sum(p.numel() for p in model.parameters())
        after_backward, optimizer = optimizer_step(
            model, point["in_backward"], optimizer_class(row["optimizer"], fused=cuda)
        )
        ids = torch.randint(0, config["vocab_size"], (batch, seq_len), device=device)

        def forward_backward() -> None:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda and not pure):
                loss = net(input_ids=ids, labels=ids).loss
            loss.backward()

        def step() -> None:
            forward_backward()
            after_backward()

        step()  # the moments are made on the first step; not timed
        sync(device)
        stats = spread(timed(step, device, repeats=10, seconds=seconds))
        row |= stats | {"tokens_per_s": batch * seq_len / (stats["median_ms"] / 1000)}
        sync(device)
        row["resident_gib"] = torch.cuda.memory_allocated(device) / 2**30 - before if cuda else None
        row["peak_memory_gib"] = (peak_gib(device) or 0.0) - before  # before the parts below
        row["status"] = "ok"
        if optimizer is not None:
            row |= parts_apart(forward_backward, optimizer, device, seconds)
    except Exception as error:
        row["status"] = failure(error)
        row.setdefault("peak_memory_gib", (peak_gib(device) or 0.0) - before)
    if model is not None and hasattr(model, "remove_optimizer_hooks"):
        model.remove_optimizer_hooks()
    model = net = None  # the closures above hold the model through these names
    free(device)
    return row


def parts_apart(forward_backward: Callable[[], None], optimizer: torch.optim.Optimizer, device: torch.device,
                seconds: float) -> dict[str, Any]:  # fmt: skip
    """The forward-and-backward and the optimizer step timed apart (gradients kept between them)."""
    try:
        optimizer.zero_grad(set_to_none=True)
        backward_ms = spread(timed(forward_backward, device, 5, seconds / 2))["median_ms"]
        # the gradients left by the last backward give the optimizer something to step
        optimizer_ms = spread(timed(optimizer.step, device, 10, seconds / 2))["median_ms"]
        optimizer.zero_grad(set_to_none=True)
        return {"forward_backward_ms": backward_ms, "optimizer_ms": optimizer_ms}
    except Exception as error:
        optimizer.zero_grad(set_to_none=True)
        return {"parts_status": failure(error)}


def free(device: torch.device) -> None:
    """Give back every tensor of the last point: the in-backward hooks make reference cycles."""
    gc.collect()
    reset_peak(device)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--tiny", action="store_true", help="tiny model on whatever device is here")
    parser.add_argument("--seconds", type=float, default=6.0, help="time spent timing each point")
    parser.add_argument("--from-point", type=int, default=0, help="skip the points before this index")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    found = versions()
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    rows = []
    path = args.out / "full_finetune_steps.csv"
    for point in points(args.tiny)[args.from_point :]:
        row = measure(device, point, args.seconds) | {"gpu": gpu, **found}
        rows.append(row)
        row["left_allocated_gib"] = torch.cuda.memory_allocated() / 2**30 if device.type == "cuda" else None
        shown = ("left_allocated_gib", "model", "precision", "optimizer", "optimizer_in_backward",
                 "median_ms", "optimizer_ms", "peak_memory_gib", "status")  # fmt: skip
        print(json.dumps({k: row.get(k) for k in shown}), flush=True)
        write(path, COLUMNS, rows)  # after every point: a later crash keeps the rest
    return 0 if any(row.get("status") == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
