"""The two JSON documents between a benchmark's parent and its child process: the spec the
parent writes (:func:`perdollar.measure.runner.make_spec`) and the result the child writes back.

Both cross a process boundary as JSON; these types say what each holds, so that the code on
either side reads fields by name rather than guessing at a free dictionary.
"""

from __future__ import annotations

from typing import TypedDict

from perdollar.measure.result import Status
from perdollar.vocabulary import Kind


class LoopSettingsFields(TypedDict, total=False):
    """:class:`~perdollar.measure.loop.LoopSettings` as its fields."""

    duration_s: float
    target_precision: float
    min_blocks: int
    block_seconds: float
    warmup_window: int
    warmup_tolerance: float
    warmup_share: float
    min_warmup_steps: int


class BenchSpec(TypedDict, total=False):
    """What the child is asked to measure."""

    workload: str  # a spec string the child loads the workload from
    mode: str
    batch_size: int | None
    precision: str | None
    kind: Kind | None
    nproc: int
    device: str
    memory_limit_bytes: int | None
    settings: LoopSettingsFields
    plan: str  # a --plan token, for FSDP runs
    progress: bool  # False: no progress lines (a forked child shares the parent's stdout)
    threads: int
    extra_warnings: list[str]
    parent_pid: int  # a forked child dies with this process
    rank_parent_pid: int  # a rank dies with the worker that started it


class PlanRecord(TypedDict):
    """What a measurement keeps of an FSDP plan, so it can be matched to predictions of it."""

    plan: str
    sharding: str
    activation_checkpointing: bool
    data_parallel: int
    collective_dtype: str


class BenchResult(TypedDict, total=False):
    """What the child reports: the timing figures of a run, or how it failed."""

    status: Status
    message: str
    traceback: str
    where: str
    stdout_tail: list[str]
    rank: int
    rate: dict[str, float]  # the Rate's fields
    cv: float | None
    step_time_ms: dict[str, float]
    warnings: list[str]
    utilization: dict[str, float | list[float]]
    peak_memory_bytes: float | None
    device: str
    warmup_steps: int
    timed_steps: int
    blocks: int
    elapsed_s: float
    stop_reason: str
    torch_threads: int
    host_dispatch_ms: float
    backend: str
    world_size: int
    plan: str
    sharding: str
    activation_checkpointing: bool
    data_parallel: int
    collective_dtype: str
