"""The readable form of a language-model training prediction."""

from __future__ import annotations

from collections.abc import Mapping

from rich.markup import escape
from rich.table import Table

from perdollar.cli.common import console, print_table
from perdollar.fmt import format_band, format_number


# The training document is built by ``perdollar.ask.llm_prediction.predict_llm``: its
# figures are numbers, its breakdowns maps of numbers; read so, any other value is a bug there.
def _number(document: Mapping[str, object], key: str) -> float:
    value = document.get(key)
    if not isinstance(value, int | float):
        raise TypeError(f"the prediction's {key} is {value!r}, not a number")
    return value


def _numbers(document: Mapping[str, object], key: str) -> dict[str, float]:
    part = document.get(key)
    if not isinstance(part, Mapping):
        raise TypeError(f"the prediction's {key} is {part!r}, not a map of numbers")
    return {str(name): _number(part, name) for name in part}


def print_llm_prediction(result: Mapping[str, object]) -> None:
    plan = result["plan"]
    token = plan.get("token") if isinstance(plan, Mapping) else None  # TrainingPlan.to_dict()
    console.print(
        f"[bold]{escape(str(result['workload']))}[/] on {result['nodes']} × {result['cloud']} "
        f"{result['instance_type']} "
        f"({result['accelerator']}, {result['gpus']} GPU(s), seq {result['seq_len']}, global batch "
        f"{result['global_batch']} sequences, {result['precision']}, {result['finetune']} fine-tuning)"
    )
    console.print(f"plan: {result['plan_text']}  [dim]({token}; {result['plan_source']})[/]")
    band = format_band(
        _number(result, "tokens_per_second"),
        _number(result, "tokens_per_second_low"),
        _number(result, "tokens_per_second_high"),
        "tokens/s",
    )
    band_part = result.get("band")
    group = band_part.get("group") if isinstance(band_part, Mapping) else None
    origin = f"80% band from held-out runs: {escape(str(group))}" if group else "80% band"
    console.print(f"throughput: {band}  [dim]({origin}; basis: {result['basis']})[/]")
    console.print(
        f"            {format_number(_number(result, 'samples_per_second'))} sequences/s · step "
        f"{format_number(_number(result, 'step_time_s'))} s · MFU {100 * _number(result, 'mfu'):.1f}%  "
        f"[dim]({result.get('mfu_formula') or '6·N + attention FLOPs per token'} over the dense peak)[/]"
    )
    if result.get("mfu_remark"):
        console.print(f"            [yellow]{escape(str(result['mfu_remark']))}[/]")
    console.print(f"bottleneck: {result['bottleneck']}")
    memory = _numbers(result, "memory_gib")
    parts = ", ".join(
        f"{name.replace('_', ' ')} {memory[name]:.1f}"
        for name in ("weights", "gradients", "optimizer_states", "activations", "buffers")
        if memory.get(name)
    )
    fit = f"does NOT fit: {result['fit_reason']}"
    if result["fits"]:
        spare = memory.get("capacity", 0.0) - _number(result, "memory_per_gpu_gib")
        reason = result["fit_reason"]
        fit = str(reason) if reason else f"fits with {spare:.1f} GiB to spare"
    console.print(
        f"memory per GPU: {result['memory_per_gpu_gib']:.1f} GiB of {memory.get('capacity', 0):.1f} usable "
        f"{f'({parts}) ' if parts else ''}— {fit}"
    )
    if result.get("precision_remark"):
        console.print(f"precision: {escape(str(result['precision_remark']))}")
    if result["largest_micro_batch"]:
        console.print(f"largest micro-batch that fits with this plan: {result['largest_micro_batch']}")
    breakdown = _numbers(result, "breakdown_s")
    if breakdown:
        table = Table(title="One optimizer step (s)", title_justify="left")
        table.add_column("part")
        table.add_column("seconds", justify="right")
        table.add_column("share", justify="right")
        total = sum(breakdown.values()) or 1.0
        for name, seconds in sorted(breakdown.items(), key=lambda kv: -kv[1]):
            table.add_row(name, format_number(seconds), f"{100 * seconds / total:.0f}%")
        print_table(table)
