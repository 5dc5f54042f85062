"""The readable form of a language-model training prediction."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from perdollar.cli.common import console, print_table
from perdollar.fmt import format_band, format_number


def print_llm_prediction(result: dict[str, Any]) -> None:
    console.print(
        f"[bold]{escape(result['workload'])}[/] on {result['nodes']} × {result['cloud']} "
        f"{result['instance_type']} "
        f"({result['accelerator']}, {result['gpus']} GPU(s), seq {result['seq_len']}, global batch "
        f"{result['global_batch']} sequences, {result['precision']}, {result['finetune']} fine-tuning)"
    )
    console.print(
        f"plan: {result['plan_text']}  [dim]({result['plan']['token']}; {result['plan_source']})[/]"
    )
    band = format_band(
        result["tokens_per_second"],
        result["tokens_per_second_low"],
        result["tokens_per_second_high"],
        "tokens/s",
    )
    group = result.get("band", {}).get("group")
    origin = f"80% band from held-out runs: {escape(group)}" if group else "80% band"
    console.print(f"throughput: {band}  [dim]({origin}; basis: {result['basis']})[/]")
    console.print(
        f"            {format_number(result['samples_per_second'])} sequences/s · step "
        f"{format_number(result['step_time_s'])} s · MFU {100 * result['mfu']:.1f}%  "
        f"[dim]({result.get('mfu_formula') or '6·N + attention FLOPs per token'} over the dense peak)[/]"
    )
    if result.get("mfu_remark"):
        console.print(f"            [yellow]{escape(result['mfu_remark'])}[/]")
    console.print(f"bottleneck: {result['bottleneck']}")
    memory = result["memory_gib"]
    parts = ", ".join(
        f"{name.replace('_', ' ')} {memory[name]:.1f}"
        for name in ("weights", "gradients", "optimizer_states", "activations", "buffers")
        if memory.get(name)
    )
    fit = f"does NOT fit: {result['fit_reason']}"
    if result["fits"]:
        spare = memory.get("capacity", 0.0) - result["memory_per_gpu_gib"]
        fit = result["fit_reason"] or f"fits with {spare:.1f} GiB to spare"
    console.print(
        f"memory per GPU: {result['memory_per_gpu_gib']:.1f} GiB of {memory.get('capacity', 0):.1f} usable "
        f"{f'({parts}) ' if parts else ''}— {fit}"
    )
    if result.get("precision_remark"):
        console.print(f"precision: {escape(result['precision_remark'])}")
    if result["largest_micro_batch"]:
        console.print(f"largest micro-batch that fits with this plan: {result['largest_micro_batch']}")
    breakdown = result["breakdown_s"]
    if breakdown:
        table = Table(title="One optimizer step (s)", title_justify="left")
        table.add_column("part")
        table.add_column("seconds", justify="right")
        table.add_column("share", justify="right")
        total = sum(breakdown.values()) or 1.0
        for name, seconds in sorted(breakdown.items(), key=lambda kv: -kv[1]):
            table.add_row(name, format_number(seconds), f"{100 * seconds / total:.0f}%")
        print_table(table)
