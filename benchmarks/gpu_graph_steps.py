"""Time language-model steps as a serving engine runs them, with the GPU's power, on this machine.

    python3 benchmarks/gpu_graph_steps.py OUT_DIR            # on a GPU (~4 min on an H200)
    python3 benchmarks/gpu_graph_steps.py OUT_DIR --tiny     # on a CPU: the same code, tiny models

Engines such as vLLM and SGLang capture a decode step in a CUDA graph, so a step costs what the
GPU does and almost nothing on the host. This script builds the decoder itself in plain PyTorch
(random bf16 weights shaped as the published configs, never downloaded), captures one decode step
of ``batch`` sequences over a static KV cache of ``context`` tokens in a CUDA graph and replays it:
the time is the physics a serving prediction must get right before it adds an engine's host time.
Prefill is timed eagerly (its kernels are long enough that launches do not matter).

- dense: Llama-3.1-8B and Qwen2.5-32B (grouped-query attention, SwiGLU);
- mixture of experts: Qwen3-30B-A3B (128 experts, 8 per token), the experts run as one grouped
  matrix product per projection (``torch._grouped_mm``) after sorting tokens by expert, as
  current engines do.

Rotary embeddings and sampling are left out (under 1% of a step). Each point is the median of
repeats timed with CUDA events; then the step is replayed for about a second while the driver's
energy counter runs, which gives the mean board power and the joules of one step. A point that runs
out of memory or fails is a row with its status. Written: ``graph_steps.csv``, ``machine.json``.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

# A step to time, how it runs (cuda-graph or eager) and the KV cache it holds (GiB).
Built = tuple[Callable[[], Any], str, float]


@dataclass(frozen=True)
class Shape:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0

    def weight_bytes(self) -> float:
        attention = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
        attention += self.heads * self.head_dim * self.hidden
        if self.experts:
            mlp = self.experts * 3 * self.hidden * self.expert_intermediate + self.hidden * self.experts
        else:
            mlp = 3 * self.hidden * self.intermediate
        return 2.0 * (self.layers * (attention + mlp) + 2 * self.vocab * self.hidden)

    def kv_bytes_per_token(self) -> float:
        return 2.0 * 2 * self.layers * self.kv_heads * self.head_dim


LLAMA_31_8B = Shape("llama-3.1-8b", 4096, 32, 32, 8, 128, 14336, 128256)
QWEN_25_32B = Shape("qwen2.5-32b", 5120, 64, 40, 8, 128, 27648, 152064)
QWEN3_30B_A3B = Shape("qwen3-30b-a3b", 2048, 48, 32, 4, 128, 0, 151936, 128, 8, 768)
TINY = Shape("tiny", 64, 2, 4, 2, 16, 128, 512)
TINY_MOE = Shape("tiny-moe", 64, 2, 4, 2, 16, 0, 512, 8, 2, 32)

COLUMNS = [
    "gpu", "engine", "model", "precision", "phase", "batch", "context_tokens",
    "new_tokens_per_sequence", "median_ms", "p10_ms", "p90_ms", "repeats", "tokens_per_s",
    "weight_gib", "kv_cache_gib", "mean_power_w", "joules_per_step", "sm_clock_mhz", "status",
    "torch",
]  # fmt: skip


class Decoder:
    """Random bf16 weights of one model, laid out as engines fuse them (QKV and gate-up)."""

    def __init__(self, shape: Shape, device: torch.device) -> None:
        self.shape = shape
        s = shape

        def weight(*dims: int) -> torch.Tensor:
            return torch.randn(*dims, device=device, dtype=torch.bfloat16) * 0.02

        qkv = (s.heads + 2 * s.kv_heads) * s.head_dim
        self.layers: list[dict[str, torch.Tensor]] = []
        for _ in range(s.layers):
            layer = {
                "qkv": weight(s.hidden, qkv),
                "out": weight(s.heads * s.head_dim, s.hidden),
                "norm1": torch.ones(s.hidden, device=device, dtype=torch.bfloat16),
                "norm2": torch.ones(s.hidden, device=device, dtype=torch.bfloat16),
            }
            if s.experts:
                layer["router"] = weight(s.hidden, s.experts)
                # Stored output-major, as checkpoints keep them; the product reads them transposed.
                layer["expert_gate_up"] = weight(s.experts, 2 * s.expert_intermediate, s.hidden)
                layer["expert_down"] = weight(s.experts, s.hidden, s.expert_intermediate)
            else:
                layer["gate_up"] = weight(s.hidden, 2 * s.intermediate)
                layer["down"] = weight(s.intermediate, s.hidden)
            self.layers.append(layer)
        self.embedding = weight(s.vocab, s.hidden)
        self.head = weight(s.hidden, s.vocab)

    def mlp(self, layer: dict[str, torch.Tensor], h: torch.Tensor) -> torch.Tensor:
        s = self.shape
        if not s.experts:
            gate, up = (h @ layer["gate_up"]).chunk(2, dim=-1)
            return (F.silu(gate) * up) @ layer["down"]
        tokens = h.shape[0]
        weights, chosen = torch.topk(
            torch.softmax((h @ layer["router"]).float(), dim=-1), s.experts_per_token, dim=-1
        )
        flat = chosen.flatten()
        order = torch.argsort(flat)
        counts = torch.zeros(s.experts, device=h.device, dtype=torch.int32)
        counts.index_add_(0, flat.to(torch.int32), torch.ones_like(flat, dtype=torch.int32))
        ends = torch.cumsum(counts, dim=0, dtype=torch.int32)
        source = order // s.experts_per_token
        sorted_inputs = h[source]
        gate, up = grouped_matmul(sorted_inputs, layer["expert_gate_up"], ends).chunk(2, dim=-1)
        outputs = grouped_matmul(F.silu(gate) * up, layer["expert_down"], ends)
        outputs = outputs * weights.flatten()[order].unsqueeze(-1).to(outputs.dtype)
        combined = torch.zeros(tokens, s.hidden, device=h.device, dtype=outputs.dtype)
        return combined.index_add_(0, source, outputs)

    def attend(
        self,
        layer: dict[str, torch.Tensor],
        h: torch.Tensor,
        batch: int,
        length: int,
        cache: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> torch.Tensor:
        s = self.shape
        qkv = h @ layer["qkv"]
        q, k, v = qkv.split([s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim], dim=-1)
        q = q.view(batch, length, s.heads, s.head_dim).transpose(1, 2)
        k = k.view(batch, length, s.kv_heads, s.head_dim).transpose(1, 2)
        v = v.view(batch, length, s.kv_heads, s.head_dim).transpose(1, 2)
        if cache is None:  # prefill: causal attention over the prompt
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:  # decode: the new token's keys and values go to the cache's last slot
            keys, values = cache
            keys[:, :, -1:, :].copy_(k)
            values[:, :, -1:, :].copy_(v)
            # One new token: a KV head's query heads are rows of one query block, exact without a
            # mask, so every kernel reads each cached key once (as decode kernels of engines do).
            group = s.heads // s.kv_heads
            grouped = q.reshape(batch, s.kv_heads, group, s.head_dim)
            attended = F.scaled_dot_product_attention(grouped, keys, values)
            attended = attended.reshape(batch, s.heads, 1, s.head_dim)
        return attended.transpose(1, 2).reshape(batch * length, s.heads * s.head_dim) @ layer["out"]

    def forward(
        self,
        tokens: torch.Tensor,
        batch: int,
        length: int,
        caches: list[tuple[torch.Tensor, torch.Tensor]] | None,
    ) -> torch.Tensor:
        x = self.embedding[tokens.flatten()]
        for index, layer in enumerate(self.layers):
            h = F.rms_norm(x, (self.shape.hidden,), layer["norm1"])
            x = x + self.attend(layer, h, batch, length, None if caches is None else caches[index])
            x = x + self.mlp(layer, F.rms_norm(x, (self.shape.hidden,), layer["norm2"]))
        last = x.view(batch, length, -1)[:, -1, :]
        return last @ self.head


def grouped_matmul(inputs: torch.Tensor, weights: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    """One product per expert over its run of sorted rows (``ends``: cumulative row counts)."""
    weights = weights.transpose(-2, -1)
    if inputs.is_cuda and hasattr(torch, "_grouped_mm"):
        return torch._grouped_mm(inputs, weights, offs=ends)
    outputs = torch.zeros(inputs.shape[0], weights.shape[-1], dtype=inputs.dtype, device=inputs.device)
    start = 0
    for expert, end in enumerate(ends.tolist()):
        if end > start:
            outputs[start:end] = inputs[start:end] @ weights[expert]
        start = end
    return outputs


def time_calls(call: Callable[[], Any], device: torch.device, budget_s: float) -> list[float]:
    """Median-ready per-call times in ms: repeats of several calls each, after a warm-up."""
    call()
    call()
    if device.type != "cuda":
        times = []
        for _ in range(3):
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1e3)
        return times
    torch.cuda.synchronize()
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start_event.record()
    call()
    end_event.record()
    torch.cuda.synchronize()
    one = max(start_event.elapsed_time(end_event), 1e-3)
    per_repeat = max(1, min(50, int(30.0 / one)))
    repeats = max(3, min(10, int(budget_s * 1e3 / (one * per_repeat))))
    times = []
    for _ in range(repeats):
        start_event.record()
        for _ in range(per_repeat):
            call()
        end_event.record()
        torch.cuda.synchronize()
        times.append(start_event.elapsed_time(end_event) / per_repeat)
    return times


class PowerMeter:
    """The board's energy counter read around a sustained run (NVML, where it imports)."""

    def __init__(self) -> None:
        self.handle: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # no NVML means no power columns, not a failed run
            self.handle = None

    def sustained(
        self, call: Callable[[], Any], step_ms: float, seconds: float = 1.0
    ) -> tuple[float, float, float]:
        """Mean power (W), joules per call and SM clock (MHz) over about ``seconds`` of calls."""
        if self.handle is None:
            return math.nan, math.nan, math.nan
        calls = max(3, int(seconds * 1e3 / max(step_ms, 1e-3)))
        torch.cuda.synchronize()
        energy_before = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        start = time.perf_counter()
        for index in range(calls):
            call()
            if index == calls // 2:
                clock = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        joules = (self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) - energy_before) / 1e3
        return joules / elapsed, joules / calls, float(clock)

    def idle(self, seconds: float = 2.0) -> float:
        if self.handle is None:
            return math.nan
        torch.cuda.synchronize()
        time.sleep(0.5)
        before = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        time.sleep(seconds)
        return (self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) - before) / 1e3 / seconds


def decode_call(model: Decoder, batch: int, context: int, device: torch.device) -> Built:
    s = model.shape
    caches = [
        tuple(
            torch.randn(batch, s.kv_heads, context, s.head_dim, device=device, dtype=torch.bfloat16)
            for _ in range(2)
        )
        for _ in range(s.layers)
    ]
    kv_gib = sum(t.numel() * 2 for pair in caches for t in pair) / 2**30
    tokens = torch.randint(0, s.vocab, (batch, 1), device=device)

    def step() -> torch.Tensor:
        return model.forward(tokens, batch, 1, caches)  # type: ignore[arg-type]

    if device.type != "cuda":
        return step, "eager", kv_gib
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            step()
    except Exception:  # an op that cannot be captured: time it eagerly instead
        torch.cuda.synchronize()
        return step, "eager", kv_gib
    return graph.replay, "cuda-graph", kv_gib


def measure_point(
    rows: list[dict[str, Any]],
    base: dict[str, Any],
    build: Callable[[], Built],
    tokens_per_call: int,
    device: torch.device,
    power: PowerMeter,
    budget_s: float,
) -> None:
    row = {
        **base,
        "median_ms": "",
        "p10_ms": "",
        "p90_ms": "",
        "repeats": 0,
        "tokens_per_s": "",
        "kv_cache_gib": "",
        "mean_power_w": "",
        "joules_per_step": "",
        "sm_clock_mhz": "",
    }
    try:
        call, engine, kv_gib = build()
        times = sorted(time_calls(call, device, budget_s))
        median = statistics.median(times)
        watts, joules, clock = power.sustained(call, median) if device.type == "cuda" else (math.nan,) * 3
        row.update(
            engine=engine,
            median_ms=f"{median:.4g}",
            p10_ms=f"{times[len(times) // 10]:.4g}",
            p90_ms=f"{times[min(len(times) - 1, (9 * len(times)) // 10)]:.4g}",
            repeats=len(times),
            tokens_per_s=f"{tokens_per_call / median * 1e3:.4g}",
            kv_cache_gib=f"{kv_gib:.3g}",
            status="ok",
            mean_power_w="" if math.isnan(watts) else f"{watts:.4g}",
            joules_per_step="" if math.isnan(joules) else f"{joules:.4g}",
            sm_clock_mhz="" if math.isnan(clock) else f"{clock:.0f}",
        )
    except torch.OutOfMemoryError:
        row["status"] = "out-of-memory"
    except Exception as error:  # a failed point is a recorded result
        row["status"] = f"failed: {type(error).__name__}: {str(error)[:120]}"
    rows.append(row)
    print(
        json.dumps(
            {
                k: row[k]
                for k in (
                    "model",
                    "phase",
                    "batch",
                    "context_tokens",
                    "engine",
                    "median_ms",
                    "mean_power_w",
                    "status",
                )
            }
        ),
        flush=True,
    )
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_model(
    shape: Shape,
    decode_points: list[tuple[int, int]],
    prefill_points: list[tuple[int, int]],
    device: torch.device,
    power: PowerMeter,
    memory_gib: float,
    rows: list[dict[str, Any]],
    gpu: str,
    deadline: float,
) -> None:
    model = Decoder(shape, device)
    base = {
        "gpu": gpu,
        "model": shape.name,
        "precision": "bf16",
        "torch": torch.__version__,
        "weight_gib": f"{shape.weight_bytes() / 2**30:.3g}",
    }
    free_gib = memory_gib - shape.weight_bytes() / 2**30 - 6.0
    for batch, context in decode_points:
        point = {
            **base,
            "phase": "decode",
            "batch": batch,
            "context_tokens": context,
            "new_tokens_per_sequence": 1,
            "engine": "",
        }
        if time.time() > deadline:
            rows.append({**point, "status": "skipped"})
            continue
        if batch * context * shape.kv_bytes_per_token() / 2**30 > free_gib:
            rows.append({**point, "status": "cache over free memory"})
            continue
        measure_point(
            rows,
            point,
            lambda b=batch, c=context: decode_call(model, b, c, device),
            batch,
            device,
            power,
            0.4,
        )
    for batch, prompt in prefill_points:
        point = {
            **base,
            "phase": "prefill",
            "batch": batch,
            "context_tokens": prompt,
            "new_tokens_per_sequence": prompt,
            "engine": "",
        }
        if time.time() > deadline:
            rows.append({**point, "status": "skipped"})
            continue
        tokens = torch.randint(0, shape.vocab, (batch, prompt), device=device)

        def build(t: torch.Tensor = tokens, b: int = batch, p: int = prompt) -> Built:
            def call() -> torch.Tensor:
                with torch.no_grad():
                    return model.forward(t, b, p, None)

            return call, "eager", 0.0

        measure_point(rows, point, build, batch * prompt, device, power, 0.6)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--tiny", action="store_true", help="tiny models on whatever device there is")
    parser.add_argument("--budget-s", type=float, default=330.0, help="stop starting points after this")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    deadline = time.time() + args.budget_s
    power = PowerMeter() if device.type == "cuda" else PowerMeter.__new__(PowerMeter)
    if device.type != "cuda":
        power.handle = None
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    memory_gib = torch.cuda.get_device_properties(0).total_memory / 2**30 if device.type == "cuda" else 8.0
    machine = {
        "gpu": gpu,
        "memory_gib": memory_gib,
        "torch": torch.__version__,
        "idle_power_w": power.idle() if device.type == "cuda" else None,
        "grouped_mm": hasattr(torch, "_grouped_mm"),
    }
    if power.handle is not None:
        machine["power_limit_w"] = power.nvml.nvmlDeviceGetEnforcedPowerLimit(power.handle) / 1e3
    print(json.dumps(machine), flush=True)
    rows: list[dict[str, Any]] = []
    with torch.no_grad():
        if args.tiny:
            run_model(TINY, [(1, 64), (4, 128)], [(1, 64)], device, power, memory_gib, rows, gpu, deadline)
            run_model(TINY_MOE, [(2, 64)], [(1, 32)], device, power, memory_gib, rows, gpu, deadline)
        else:
            contexts = (512, 2048, 8192)
            run_model(
                LLAMA_31_8B,
                [(b, c) for c in contexts for b in (1, 8, 32, 64, 128, 256)],
                [(1, 512), (1, 2048), (4, 2048), (1, 8192), (8, 4096)],
                device,
                power,
                memory_gib,
                rows,
                gpu,
                deadline,
            )
            run_model(
                QWEN3_30B_A3B,
                [(b, 2048) for b in (1, 8, 32, 64, 128, 256)],
                [(1, 2048), (8, 2048)],
                device,
                power,
                memory_gib,
                rows,
                gpu,
                deadline,
            )
            run_model(
                QWEN_25_32B,
                [(b, c) for c in (512, 4096) for b in (1, 8, 32, 64)],
                [(1, 2048), (4, 2048)],
                device,
                power,
                memory_gib,
                rows,
                gpu,
                deadline,
            )
    with (args.out_dir / "graph_steps.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    (args.out_dir / "machine.json").write_text(json.dumps(machine, indent=2) + "\n")
    return 0 if any(row["status"] == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
