"""Measure candidates for real: benchmark jobs, executors (SkyPilot, local), the sweep strategy.

    >>> from perdollar.ask.sweep import prepare_sweep, sweep_workload
    >>> from perdollar.launch import JobOptions, LocalExecutor, SweepSettings
    >>> question = Question("mlp", goal=TrainingGoal(target_samples=1e9))
    >>> inputs, recommendation = prepare_sweep(question)
    >>> result, stored, reranked = sweep_workload(question, inputs, recommendation, LocalExecutor(),
    ...                                           SweepSettings(max_runs=3), JobOptions(workload="mlp"))

SkyPilot is imported only by :class:`SkyPilotExecutor` and :func:`build_task`.
"""

from perdollar.launch.export import describe, parse_candidate
from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.local import LocalExecutor
from perdollar.launch.outcome import JobOutcome
from perdollar.launch.plan import SweepContext
from perdollar.launch.skypilot import SkyPilotExecutor, build_task, task_config, task_yaml, write_task_yaml
from perdollar.launch.spec import BenchmarkJob, JobCaps, JobResources, derive_caps
from perdollar.launch.strategy import Belief, Pick, p_top_is_best, rank_picks, value_of_measuring
from perdollar.launch.sweep import SweepResult, SweepSettings, run_sweep

__all__ = [
    "Belief",
    "BenchmarkJob",
    "JobCaps",
    "JobOptions",
    "JobOutcome",
    "JobResources",
    "LocalExecutor",
    "Pick",
    "SkyPilotExecutor",
    "SweepContext",
    "SweepResult",
    "SweepSettings",
    "build_task",
    "derive_caps",
    "describe",
    "job_for_estimate",
    "p_top_is_best",
    "parse_candidate",
    "rank_picks",
    "run_sweep",
    "task_config",
    "task_yaml",
    "value_of_measuring",
    "write_task_yaml",
]
