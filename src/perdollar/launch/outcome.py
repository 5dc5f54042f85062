"""What came back from one benchmark job: a measurement, or the reason there is none."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from perdollar.jsonable import JsonObject
from perdollar.launch.spec import RESULT_BEGIN, RESULT_END, BenchmarkJob
from perdollar.measure.result import Measurement
from perdollar.measure.serialize import measurement_from_dict

OutcomeStatus = Literal["ok", "workload-failed", "timeout", "crashed", "failed-to-provision", "skipped"]


@dataclass(frozen=True, slots=True)
class JobOutcome:
    job: BenchmarkJob
    executor: str  # skypilot | local
    status: OutcomeStatus
    reason: str  # empty when ok
    measurement: Measurement | None
    wall_seconds: float
    log_tail: str = ""
    log_path: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def spent_usd_cap(self) -> float:
        """The most this job can have cost (its cap); what a budget is charged."""
        return 0.0 if self.status == "skipped" else self.job.caps.max_dollars


def extract_result(log_text: str) -> tuple[JsonObject | None, int | None]:
    """The JSON result framed between the marker lines of a job log, and the exit status."""
    start = log_text.rfind(RESULT_BEGIN)
    if start < 0:
        return None, None
    end = log_text.find(RESULT_END, start)
    if end < 0:
        return None, None
    body = log_text[start + len(RESULT_BEGIN) : end].strip()
    trailer = log_text[end + len(RESULT_END) :].split("\n", 1)[0]
    exit_code = None
    if "exit=" in trailer:
        try:
            exit_code = int(trailer.split("exit=", 1)[1].split()[0])
        except (ValueError, IndexError):
            exit_code = None
    if not body:
        return None, exit_code
    # Tolerate a progress line or warning before the JSON document.
    brace = body.find("{")
    try:
        parsed = json.loads(body[brace:]) if brace >= 0 else None
    except json.JSONDecodeError:
        return None, exit_code
    return (parsed if isinstance(parsed, dict) else None), exit_code


def measurement_from_json(data: Mapping[str, object]) -> Measurement:
    """A measurement from `perdollar bench --json` output."""
    return measurement_from_dict(data)


def mark_provenance(measurement: Measurement, outcome_job: BenchmarkJob, executor: str) -> Measurement:
    """Say which executor produced a measurement and for which candidate it was run.

    A local run measured this host, not the candidate: the marker keeps it from ever being
    read as a figure of the candidate instance.
    """
    extra = dict(measurement.extra)
    extra.update(
        {
            "executor": executor,
            "candidate": outcome_job.candidate,
            "job": outcome_job.name,
            "cost_cap_usd": round(outcome_job.caps.max_dollars, 4),
        }
    )
    if executor == "local":
        extra["measured_on"] = "this host (local executor), not the candidate instance"
    return replace(measurement, extra=extra)


def outcome_from_log(
    job: BenchmarkJob,
    executor: str,
    log_text: str,
    *,
    returncode: int | None,
    wall_seconds: float,
    log_path: str | None = None,
) -> JobOutcome:
    """Classify a finished job from its log and exit status."""
    tail = "\n".join(log_text.strip().splitlines()[-15:])
    data, script_exit = extract_result(log_text)
    exit_code = script_exit if script_exit is not None else returncode
    measurement = None
    if data is not None:
        try:
            measurement = mark_provenance(measurement_from_json(data), job, executor)
        except (KeyError, TypeError, ValueError) as error:
            return JobOutcome(
                job, executor, "crashed", f"unreadable result: {error}", None, wall_seconds, tail, log_path
            )
    if exit_code in (124, 137) and (measurement is None or measurement.status != "ok"):
        reason = f"killed at its {job.caps.max_seconds:.0f}-s cap (${job.caps.max_dollars:.2f})"
        return JobOutcome(job, executor, "timeout", reason, measurement, wall_seconds, tail, log_path)
    if measurement is None:
        last = tail.splitlines()[-1] if tail else "no output"
        return JobOutcome(
            job, executor, "crashed", f"exit status {exit_code}: {last}", None, wall_seconds, tail, log_path
        )
    if measurement.status != "ok":
        reason = f"{measurement.status}: {measurement.message}".rstrip(": ")
        status: OutcomeStatus = "timeout" if measurement.status == "timeout" else "workload-failed"
        return JobOutcome(job, executor, status, reason, measurement, wall_seconds, tail, log_path)
    return JobOutcome(job, executor, "ok", "", measurement, wall_seconds, tail, log_path)
