"""The options of ``perdollar sweep``: how it measures, what each node installs, and the goal of
the job it measures for. Declared once here and generated onto the command by
:func:`perdollar.cli.declared.takes`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perdollar.ask.options import OBJECTIVE
from perdollar.cli.recommend_options import Goal
from perdollar.price.fixed_costs import PROVISIONING_SECONDS
from perdollar.question import declared, declared_as
from perdollar.vocabulary import TrainingObjective


@dataclass(frozen=True, slots=True)
class SweepFlags:
    """How the sweep measures: how many runs, what they may cost, where they run."""

    top: int | None = declared(None, "--top", "Measure at most K candidates (default 3).", short="-k")
    budget: float | None = declared(None, "--budget", "Spend at most this on benchmarks.", unit="USD")
    via: str = declared("skypilot", "--via", "skypilot (real instances) or local (this machine).")
    dry_run: bool = declared(False, "--dry-run", "Write SkyPilot task YAMLs and print the plan only.")
    out: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None, "--out", "Folder for task YAMLs, logs and sweep.json.", short="-o"
    )
    parallel: int = declared(2, "--parallel", "Jobs launched at once.", short="-P")
    strategy: str = declared("voi", "--strategy", "voi (value of information per $) or top-k.")
    confidence: float = declared(0.9, "--confidence", "Stop when P(top choice is best) reaches this.")
    duration: str = declared("60", "--duration", "Measuring window per job (60, 90s, 2m).", short="-d")
    only: tuple[str, ...] = declared(
        (), "--only", "Measure only this configuration (repeatable), e.g. '1x g5.xlarge spot'."
    )
    max_dollars_per_run: float | None = declared(
        None, "--max-dollars-per-run", "Cap per job (default: what --duration costs).", unit="USD"
    )
    overhead: str = declared(
        f"{PROVISIONING_SECONDS:g}",
        "--overhead-seconds",
        "Billed provisioning + setup time assumed per job.",
        unit="s",
    )


@dataclass(frozen=True, slots=True)
class NodeSetup:
    """What each node installs and syncs, and where it writes its results."""

    requirements: str | None = declared(
        None, "--requirements", "Your requirements file (relative to --workdir) to install."
    )
    workdir: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None, "--workdir", "Folder synced to the node (your workload)."
    )
    install: str = declared("", "--install", "pip requirement that installs perdollar on the node.")
    remote_store: str | None = declared(
        None,
        "--remote-store",
        "Shared store URL the nodes write to directly (sent as the secret PERDOLLAR_STORE).",
    )


@dataclass(frozen=True, slots=True)
class JobGoal:
    """The goal of the job the sweep measures for (recommend's --budget and --confidence, renamed
    because the sweep's own budget and confidence take those names)."""

    job_budget: float | None = declared(
        None, "--job-budget", "Expected cost cap of the job itself (recommend's --budget).", unit="USD"
    )
    objective: TrainingObjective = declared_as(OBJECTIVE, "samples-per-dollar")  # noqa: RUF009 (a dataclasses.field)
    weights: str | None = declared(None, "--weights", "For --objective weighted: time=1,cost=2.")
    deadline_confidence: float = declared(
        0.9, "--deadline-confidence", "Required P(finish by --deadline) (recommend's --confidence)."
    )

    def goal(self) -> Goal:
        return Goal(self.job_budget, self.objective, self.weights, self.deadline_confidence)
