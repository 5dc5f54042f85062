"""Times one mixture-of-experts layer of randomly initialised models at 1 to 512 rows per expert.

    python3 benchmarks/gpu_moe_layers.py OUT.csv [--models qwen3-30b-a3b,gpt-oss-20b,deepseek-v3]
    python3 benchmarks/gpu_moe_layers.py OUT.csv --dry-run     # tiny sizes on the CPU, seconds

The layer is the routed experts of each bundled architecture (``src/perdollar/workload/llm/
configs``: hidden size, the experts' intermediate size, experts, experts a token), in bf16 with
random weights: the router's product, top-k, the permute into expert order, the experts' gated
products (gate and up, SwiGLU, down), and the weighted un-permute. Routing is balanced (token t
goes to experts t·k … t·k + k − 1, modulo the experts), so every expert receives exactly the rows
of the sweep: 1, 2, 4, … 512 rows per expert are tokens × k / experts. Decode sends a layer few
rows per expert (a batch of sequences, one token each) and prefill many (a prompt's tokens): the
sweep covers both, and the ``regime`` column says which the token count is (decode up to 512
tokens, as an engine's running batch; prefill above). Each row is timed forward alone (serving)
and, with ``--backward``, forward and backward (training).

Implementations: ``grouped_mm`` (``torch._grouped_mm``, one grouped product per projection, where
torch has it), ``loop`` (one matrix product per expert, the fallback trainers use without it) and
``vllm_fused`` (vLLM's ``fused_experts`` Triton kernel, forward only, when vllm imports). One that
fails on this device is skipped with a line saying why. Written: one CSV row per model,
implementation, pass and rows per expert, with the median seconds over repeats and the experts'
achieved TFLOP/s (their products' FLOPs only). ``--dry-run`` shrinks the hidden and intermediate
sizes to 64 and 32 and the experts to 8, two a token, and runs 1, 2 and 4 rows per expert on the
CPU once each, so a test can run the whole script in seconds.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"
MODELS = ("qwen3-30b-a3b", "gpt-oss-20b", "deepseek-v3")
ROWS_PER_EXPERT = tuple(2**i for i in range(10))  # 1 … 512
DRY_ROWS_PER_EXPERT = (1, 2, 4)
DRY_HIDDEN, DRY_INTERMEDIATE, DRY_EXPERTS, DRY_TOP_K = 64, 32, 8, 2
DECODE_TOKENS = 512  # up to this many tokens a layer sees is a decode batch
COLUMNS = (
    "device", "torch", "model", "implementation", "pass", "regime", "rows_per_expert", "tokens",
    "experts", "top_k", "hidden", "expert_intermediate", "seconds", "expert_tflops",
)  # fmt: skip


class MoELayerShape(NamedTuple):
    model: str
    hidden: int
    intermediate: int  # one expert's
    experts: int
    top_k: int


def layer_shape(model: str, dry_run: bool = False) -> MoELayerShape:
    """The routed experts' shape from the bundled Hugging Face config (Qwen3-MoE, gpt-oss and
    DeepSeek-V3 name the same facts differently)."""
    config = json.loads((CONFIGS / f"{model}.json").read_text())
    experts = config.get("num_experts") or config.get("num_local_experts") or config.get("n_routed_experts")
    intermediate = config.get("moe_intermediate_size") or config["intermediate_size"]
    if not experts:
        raise SystemExit(f"{model} is not a mixture of experts: choose among {', '.join(MODELS)}")
    if dry_run:
        return MoELayerShape(model, DRY_HIDDEN, DRY_INTERMEDIATE, DRY_EXPERTS, DRY_TOP_K)
    return MoELayerShape(model, config["hidden_size"], intermediate, experts, config["num_experts_per_tok"])


def balanced_routing(tokens: int, shape: MoELayerShape, device: torch.device) -> torch.Tensor:
    """Each token's k experts, consecutive modulo the experts: every expert gets tokens·k/E rows."""
    first = torch.arange(tokens, device=device) * shape.top_k
    return (first[:, None] + torch.arange(shape.top_k, device=device)) % shape.experts


class MoELayer(torch.nn.Module):
    def __init__(self, shape: MoELayerShape, device: torch.device, dtype: torch.dtype) -> None:
        super().__init__()
        self.shape = shape
        scale = shape.hidden**-0.5
        self.router = torch.nn.Parameter(
            torch.randn(shape.hidden, shape.experts, device=device, dtype=dtype) * scale
        )
        self.gate_up = torch.nn.Parameter(
            torch.randn(shape.experts, shape.hidden, 2 * shape.intermediate, device=device, dtype=dtype)
            * scale
        )
        self.down = torch.nn.Parameter(
            torch.randn(shape.experts, shape.intermediate, shape.hidden, device=device, dtype=dtype)
            * shape.intermediate**-0.5
        )

    def forward(
        self, x: torch.Tensor, experts: torch.Tensor, products: Callable[..., torch.Tensor]
    ) -> torch.Tensor:
        scores = torch.softmax((x @ self.router).float(), dim=-1)
        weights = torch.gather(scores, 1, experts).to(x.dtype)  # the balanced choice, the router's weights
        flat = experts.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=self.shape.experts)
        rows = x.repeat_interleave(self.shape.top_k, dim=0)[order]  # permute into expert order
        out = products(rows, counts, self.gate_up, self.down)
        unpermuted = torch.empty_like(out)
        unpermuted[order] = out
        return (unpermuted.view(-1, self.shape.top_k, self.shape.hidden) * weights[..., None]).sum(dim=1)


def swiglu(h: torch.Tensor) -> torch.Tensor:
    gate, up = h.chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def loop_products(
    rows: torch.Tensor, counts: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor
) -> torch.Tensor:
    outs, start = [], 0
    for expert, count in enumerate(counts.tolist()):
        chunk = rows[start : start + count]
        outs.append(swiglu(chunk @ gate_up[expert]) @ down[expert])
        start += count
    return torch.cat(outs)


def grouped_products(
    rows: torch.Tensor, counts: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor
) -> torch.Tensor:
    offsets = torch.cumsum(counts, 0).to(torch.int32)
    hidden = swiglu(torch._grouped_mm(rows, gate_up, offs=offsets))
    return torch._grouped_mm(hidden, down, offs=offsets)


def vllm_fused_products() -> Callable[..., torch.Tensor] | None:
    """vLLM's fused experts over the same balanced choice (forward only), when vllm imports."""
    try:
        from vllm.model_executor.layers.fused_moe import fused_experts  # type: ignore[import-not-found]
    except Exception:  # any failure to import (vllm missing, or built for another torch): no kernel
        return None
    return fused_experts


def seconds_of(fn: Callable[[], object], device: torch.device, repeats: int) -> float:
    """Median seconds of ``fn`` after warm-up: CUDA events on a GPU, the wall clock on the CPU."""
    for _ in range(2 if repeats > 1 else 1):
        fn()
    samples = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        else:
            began = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def time_layer(
    layer: MoELayer,
    implementation: str,
    rows_per_expert: int,
    backward: bool,
    device: torch.device,
    repeats: int,
) -> float:
    shape = layer.shape
    tokens = max(rows_per_expert * shape.experts // shape.top_k, 1)
    x = torch.randn(tokens, shape.hidden, device=device, dtype=layer.router.dtype, requires_grad=backward)
    experts = balanced_routing(tokens, shape, device)
    if implementation == "vllm_fused":
        fused = vllm_fused_products()
        assert fused is not None
        topk_ids = experts.to(torch.int32)
        # vLLM's layout: w1 (E, 2I, H), gate then up as in silu_and_mul; w2 (E, H, I)
        w1, w2 = (w.detach().transpose(1, 2).contiguous() for w in (layer.gate_up, layer.down))

        def step() -> object:
            weights = torch.gather(torch.softmax((x @ layer.router).float(), -1), 1, experts)
            return fused(x, w1, w2, weights, topk_ids)

        with torch.inference_mode():
            return seconds_of(step, device, repeats)
    products = grouped_products if implementation == "grouped_mm" else loop_products
    if not backward:
        with torch.inference_mode():
            return seconds_of(lambda: layer(x, experts, products), device, repeats)
    return seconds_of(lambda: layer(x, experts, products).sum().backward(), device, repeats)


def implementations() -> list[str]:
    found = ["grouped_mm"] if hasattr(torch, "_grouped_mm") else []
    found.append("loop")
    if vllm_fused_products() is not None:
        found.append("vllm_fused")
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="the CSV to write")
    parser.add_argument(
        "--models", default=",".join(MODELS), help="bundled MoE architectures, comma-separated"
    )
    parser.add_argument("--backward", action="store_true", help="also time forward and backward (training)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument(
        "--dry-run", action="store_true", help="tiny sizes on the CPU: checks the script runs"
    )
    args = parser.parse_args(argv)
    device = torch.device("cpu" if args.dry_run or not torch.cuda.is_available() else "cuda")
    if device.type == "cpu" and not args.dry_run:
        raise SystemExit("no CUDA GPU here: run on a GPU, or pass --dry-run for tiny sizes on the CPU")
    name = "cpu" if device.type == "cpu" else torch.cuda.get_device_name()
    sweep = DRY_ROWS_PER_EXPERT if args.dry_run else ROWS_PER_EXPERT
    repeats = 1 if args.dry_run else args.repeats
    passes = (False, True) if args.backward or args.dry_run else (False,)
    torch.manual_seed(0)
    written = 0
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for model in args.models.split(","):
            shape = layer_shape(model, args.dry_run)
            layer = MoELayer(shape, device, torch.bfloat16)
            for implementation in implementations():
                for backward in passes:
                    if backward and implementation == "vllm_fused":
                        continue
                    for rows in sweep:
                        try:
                            seconds = time_layer(layer, implementation, rows, backward, device, repeats)
                        except (RuntimeError, NotImplementedError) as refused:
                            print(f"  skipped {model} {implementation} at {rows} rows: {str(refused)[:120]}")
                            break
                        tokens = max(rows * shape.experts // shape.top_k, 1)
                        expert_flops = 2 * 3 * shape.hidden * shape.intermediate * tokens * shape.top_k
                        expert_flops *= 3 if backward else 1
                        writer.writerow((
                            name, torch.__version__, model, implementation,
                            "forward+backward" if backward else "forward",
                            "decode" if tokens <= DECODE_TOKENS else "prefill", rows, tokens, shape.experts,
                            shape.top_k, shape.hidden, shape.intermediate, f"{seconds:.6g}",
                            f"{expert_flops / seconds / 1e12:.4g}",
                        ))  # fmt: skip
                        written += 1
    print(f"{written} rows written to {args.out}")


if __name__ == "__main__":
    main()
