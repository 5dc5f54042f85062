"""An engine's older builds: ``--engine vllm@2024`` (or ``vllm@0.7``) predicts the speed they ran at.

The held-out serving rows that name their engine's build say how fast each year's builds ran
against the prediction (the ``builds`` of the bands table, benchmarks/llm_serving_bands.py). A
build asked for by its year, or by a version one year's rows ran, takes that year's factor as the
speed of everything the engine spends: its kernels stream and multiply at ``speed`` times the
record's shares, and its fixed costs (the host step, launches, all-reduce latency, the MoE
kernels' floor) take 1/speed as long. A step, a prefill and the most a replica serves then all
move by the factor, and a load point or an SLO search follows from them as for any engine. A
build that no dated row ran is refused, naming the builds that have rows; the engine's own
version (``vllm@0.10``) is today's build.
"""

from __future__ import annotations

from dataclasses import replace

from perdollar.errors import PerdollarError
from perdollar.predict.llm_serving.bands import BUILD_MARK, BuildSpeed, engine_builds
from perdollar.predict.llm_serving.efficiency import ServingEfficiency


def split_build(name: str) -> tuple[str, str]:
    """``vllm@2024`` → (``vllm``, ``2024``); a name without a build → (name, "")."""
    engine, _, build = name.partition(BUILD_MARK)
    return engine.strip(), build.strip().lower()


def _runs(version: str, asked: str) -> bool:
    """Whether ``version`` is the version asked for or one of its point releases and dev builds."""
    return version == asked or version.startswith(f"{asked}.")


def dated_build(engine: str, asked: str, today: str) -> BuildSpeed | None:
    """The dated build of ``engine`` that ``asked`` names (a year or a version), None for today's
    (``today``: the version the engine's record describes); refused where no held-out row ran it."""
    builds = engine_builds(engine)
    if len(asked) == 4 and asked.isdigit():
        matches = [b for b in builds if b.year == asked]
    else:
        matches = [b for b in builds if any(_runs(v, asked) for v in b.versions)]
    is_today = _runs(today, asked)
    if is_today and not matches:
        return None
    if len(matches) == 1 and not is_today:
        return matches[0]
    dated = ", ".join(f"{engine}{BUILD_MARK}{b.year} ({', '.join(b.versions)})" for b in builds)
    fix = f"use --engine {engine} (today's build, {today})"
    fix += f" or a build with dated rows: {dated}" if dated else f"; no build of {engine} has dated rows"
    named = f"--engine {engine}{BUILD_MARK}{asked}"
    if matches:
        builds_named = [f"the {b.year} builds" for b in matches] + (["today's"] if is_today else [])
        raise PerdollarError(f"{named} matches {' and '.join(builds_named)} of {engine}; name one", fix)
    raise PerdollarError(f"{named}: no held-out rows ran that build of {engine}", fix)


def at_build_speed(efficiency: ServingEfficiency, speed: float) -> ServingEfficiency:
    """``efficiency`` of a build that runs at ``speed`` times the record's: shares of the chip's
    rates times ``speed``, fixed times over it (what the engine's memory holds is unchanged)."""
    slower = 1.0 / speed
    experts, experts_weight_only = efficiency.expert_bandwidth, efficiency.expert_weight_only_bandwidth
    return replace(
        efficiency,
        bandwidth=efficiency.bandwidth * speed,
        weight_only_bandwidth=efficiency.weight_only_bandwidth * speed,
        compute=efficiency.compute * speed,
        kv_bandwidth=efficiency.kv_bandwidth * speed,
        allreduce_bandwidth=efficiency.allreduce_bandwidth * speed,
        bytes_per_sm_cycle=efficiency.bytes_per_sm_cycle * speed,
        expert_bandwidth=None if experts is None else experts * speed,
        expert_weight_only_bandwidth=None if experts_weight_only is None else experts_weight_only * speed,
        step_overhead_s_per_layer=efficiency.step_overhead_s_per_layer * slower,
        step_overhead_s=efficiency.step_overhead_s * slower,
        allreduce_latency_nvlink_s=efficiency.allreduce_latency_nvlink_s * slower,
        allreduce_latency_pcie_s=efficiency.allreduce_latency_pcie_s * slower,
        allreduce_latency_xgmi_s=efficiency.allreduce_latency_xgmi_s * slower,
        moe_floor_s=efficiency.moe_floor_s * slower,
    )
