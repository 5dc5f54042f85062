"""`perdollar profile`: FLOPs, bytes and memory of one step of a workload, traced without computing."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from perdollar.cli.common import console, emit_json, print_table, progress
from perdollar.cli.declared import Group, takes
from perdollar.cli.profile_options import ProfileRun
from perdollar.cli.shared_options import OPTIONS, OUTPUT, STEP, Output, Step
from perdollar.fmt import format_bytes, format_si

HELP = (
    "Trace one step of a workload and show what it does: FLOPs and bytes per operator, arithmetic "
    "intensity, and the accelerator memory a step needs at its peak.\n\n"
    "Nothing is computed and no weights are allocated (fake tensors, built on the meta device), so "
    "even llama-8b profiles in seconds on a laptop. Training workloads trace forward, backward and "
    "the optimizer step; inference workloads (--inference) the forward pass only.\n\n"
    "WORKLOAD is a built-in name (mlp, vit-b16, resnet50, resnet152, vgg16, inception-v3, bert-base, "
    "bert-large, gpt2, llama-8b, gnmt, ncf) or path/to/file.py:function returning a "
    "perdollar.workload.Workload, or a language model: a built-in name (llama-3.1-8b, deepseek-v3, "
    "gpt-oss-120b …) or a Hugging Face config.json, for which the summary adds its parameters by role, "
    "those active per token and its KV cache per token (--json: params, active_params_per_token, "
    "kv_cache_bytes_per_token).\n\n"
    "Examples:\n\n"
    "  perdollar profile vit-b16\n\n"
    "  perdollar profile resnet50 --batch-size 64 --precision amp-bf16 --json\n\n"
    "  perdollar profile my_model.py:build --top 20"
)


def _flops(value: float) -> str:
    return (
        f"{format_si(value)} FLOP" if value < 1e3 else f"{format_si(value)[:-1]} {format_si(value)[-1]}FLOP"
    )


def _shape(op: object) -> str:
    mnk = getattr(op, "gemm_mnk", None)
    if mnk:
        return "GEMM m={} n={} k={}".format(*mnk)
    return str(getattr(op, "shape", "")).split(" · ")[0]


def _print_summary(profile: object, top: int) -> None:
    from perdollar.profile import summary
    from perdollar.profile.model import Profile

    assert isinstance(profile, Profile)
    unit = profile.sample_unit.rstrip("s") or "sample"
    console.print(
        f"[bold]{escape(profile.workload_name)}[/] · {profile.kind} · "
        f"batch {profile.batch_size} {profile.sample_unit} · "
        f"{profile.precision} · {profile.params / 1e6:,.1f}M parameters · source: traced (fake tensors)"
    )
    forward = summary.forward_flops_per_sample(profile)
    console.print(
        f"per {unit}: {_flops(profile.flops_per_sample)} per {profile.kind} step "
        f"(forward {_flops(forward)} = {_flops(forward / 2)[:-4]}MAC) · bytes moved per {unit}: "
        f"{format_bytes(profile.bytes_per_sample)} · arithmetic intensity: "
        f"{profile.arithmetic_intensity:.3g} FLOP/byte"
    )
    by_class = Table(title="By operator class (per step)", title_justify="left")
    for column in ("class", "FLOPs", "share", "bytes moved", "share", "calls"):
        by_class.add_column(column, justify="left" if column == "class" else "right")
    totals = summary.totals_by(profile, "op_class")
    all_flops = profile.flops_per_step or 1.0
    all_bytes = profile.bytes_per_step or 1.0
    for name, group in totals.items():
        by_class.add_row(
            name,
            _flops(group["flops"]),
            f"{100 * group['flops'] / all_flops:.1f}%",
            format_bytes(group["bytes"]),
            f"{100 * group['bytes'] / all_bytes:.1f}%",
            f"{group['calls']:,.0f}",
        )
    print_table(by_class)
    for key, title in (("flops", "Top operators by FLOPs"), ("bytes", "Top operators by bytes moved")):
        table = Table(title=f"{title} (per step)", title_justify="left")
        for column in ("operator", "phase", "dtype", "calls", "FLOPs", "bytes moved", "shape"):
            table.add_column(
                column,
                justify="right" if column in ("calls", "FLOPs", "bytes moved") else "left",
                no_wrap=True,
                overflow="ellipsis",
            )
        for op in summary.top_operators(profile, key, top):
            table.add_row(
                op.name.removeprefix("aten."),
                op.phase,
                op.dtype,
                f"{op.count:,}",
                _flops(op.flops),
                format_bytes(op.bytes_moved),
                _shape(op),
            )
        print_table(table)
    memory = profile.memory
    table = Table(
        title="Accelerator memory per device at the step's peak (traced, data parallel)", title_justify="left"
    )
    table.add_column("what is live at the peak")
    table.add_column("bytes", justify="right")
    rows = (
        ("weights", memory.weights),
        ("gradients", memory.gradients),
        ("optimizer state", memory.optimizer_state),
        (f"activations saved for backward (batch {profile.batch_size})", memory.activations),
        ("workspace (other temporaries)", memory.workspace),
        ("total (peak)", memory.total),
    )
    for name, value in rows:
        table.add_row(name, format_bytes(value))
    print_table(table)
    console.print(
        f"gradient all-reduce per step: {format_bytes(profile.gradient_bytes)} · input: "
        f"{format_bytes(profile.input_bytes_per_sample)} per {unit}"
    )
    if profile.unclassified_ops:
        console.print(
            f"[yellow]unclassified operators (counted, 1 FLOP per output element):[/] "
            f"{', '.join(profile.unclassified_ops)}"
        )


@takes(run=Group(ProfileRun, panel=OPTIONS), step=STEP, output=OUTPUT)
def profile_command(
    workload: str = typer.Argument(..., help="Built-in workload name or path/to/file.py:function."),
    *,
    run: ProfileRun,
    step: Step,
    output: Output,
) -> None:
    batch_size = step.batch_size
    precision = step.precision
    json_output = output.json_output
    inference, top, timeout = run.inference, run.top, run.timeout
    from perdollar.profile.profiler import load_to_profile, profile_workload
    from perdollar.profile.summary import profile_dict

    loaded = load_to_profile(
        workload,
        batch_size=batch_size,
        precision=precision,
        kind="inference" if inference else None,
        timeout_s=timeout,
    )
    with progress(f"tracing one step of {loaded.name}", quiet=json_output):
        result = profile_workload(loaded, timeout_s=timeout)
    language_model = _language_model_counts(workload)
    if json_output:
        emit_json({**profile_dict(result), **language_model})
    else:
        _print_summary(result, max(1, top))
        if language_model:
            _print_language_model(language_model)


def _language_model_counts(workload: str) -> dict[str, object]:
    """A language model's parameters, active parameters and KV cache per token, by role (16-bit KV)."""
    from perdollar.ask.questions import family_of
    from perdollar.workload.llm import load_llm_workload

    if family_of(workload) != "language-model":
        return {}
    arch = load_llm_workload(workload).architecture
    return {
        "params": arch.total_params,
        "active_params_per_token": arch.active_params,
        "kv_cache_bytes_per_token": arch.kv_elements_per_token * 2,
        "params_by_role": arch.params_by_role(),
        "attention": "multi-head latent" if arch.is_mla else f"{arch.num_key_value_heads} key-value heads",
        "sliding_window_layers": arch.sliding_layers,
        "sliding_window": arch.sliding_window,
    }


def _print_language_model(counts: dict[str, object]) -> None:
    roles = counts["params_by_role"]
    assert isinstance(roles, dict)
    shown = " · ".join(f"{role.replace('_', ' ')} {count / 1e9:.3g}B" for role, count in roles.items())
    window = (
        f" ({counts['sliding_window_layers']} layers keep a {counts['sliding_window']:,}-token window)"
        if counts["sliding_window_layers"]
        else ""
    )
    console.print(
        f"language model: {float(counts['params']) / 1e9:.3f}B parameters ({shown}); "  # type: ignore[arg-type]
        f"{float(counts['active_params_per_token']) / 1e9:.3f}B active per token; "  # type: ignore[arg-type]
        f"KV cache {format_bytes(float(counts['kv_cache_bytes_per_token']))} per token at 16 bits, "  # type: ignore[arg-type]
        f"{counts['attention']}{window}"
    )


def register(app: typer.Typer) -> None:
    """Add ``profile`` to ``app``."""
    app.command("profile", help=HELP)(profile_command)
