"""``perdollar bench -- COMMAND …``: measure any program by the throughput lines it prints.

JAX, TensorFlow or an existing training script need no changes: perdollar runs the command,
reads its output in the formats training loops print (tqdm, the Hugging Face Trainer, Lightning,
Keras, ``312.5 samples/second``, ``img/s``, ``tokens/s``, ``step 120 loss 2.31``: see
:mod:`perdollar.measure.log_formats`) or a ``--pattern`` regex, drops the readings before they
settle, and summarises the rest like its own timed blocks.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perdollar.errors import PerdollarError
from perdollar.lifeline import child_preexec, termination_raises
from perdollar.measure import steady
from perdollar.measure.host import host_fingerprint
from perdollar.measure.log_formats import (
    KNOWN_FORMATS,
    KNOWN_FORMS,
    UNITS,
    CounterRate,
    LogFormat,
    best_format,
    user_format,
)
from perdollar.measure.redact import redact_arguments, redact_text
from perdollar.measure.result import Measurement, Rate, Status
from perdollar.measure.worker import classify_failure

# "<number> samples/second", also "samples/s", "samples/sec" and "samples per second".
DEFAULT_PATTERN = (
    r"(?P<value>[0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r"\s*samples?\s*(?:/|per)\s*s(?:ec(?:ond)?)?\b"
)


def compile_pattern(pattern: str | None) -> re.Pattern[str]:
    try:
        compiled = re.compile(pattern or DEFAULT_PATTERN, re.IGNORECASE)
    except re.error as error:
        raise PerdollarError(
            f"--pattern {pattern!r} is not a valid regular expression: {error}",
            r"write a Python regex with one number group, e.g. '([0-9.]+) img/s'",
        ) from error
    if compiled.groups < 1 and "value" not in compiled.groupindex:
        raise PerdollarError(
            f"--pattern {pattern!r} has no group to read the number from",
            r"put the number in parentheses, e.g. 'throughput: ([0-9.]+)'",
        )
    return compiled


def parse_throughput(line: str, pattern: re.Pattern[str]) -> float | None:
    """The throughput a line reports, or None when it reports none."""
    match = pattern.search(line)
    if not match:
        return None
    text = match.group("value") if "value" in pattern.groupindex else match.group(1)
    try:
        return float(text.replace(",", ""))
    except (TypeError, ValueError):
        return None


def steady_readings(readings: Sequence[float]) -> tuple[list[float], bool]:
    """The readings after warm-up, and whether a steady state was seen at all."""
    for window in (3, 2, 1):
        if len(readings) >= 3 * window + 1:
            # The first reading nearly always includes start-up, so it never counts.
            start = steady.find_steady_start(readings[1:], window=window)
            if start is not None:
                return list(readings[1 + start :]), True
    return list(readings[1:] or readings), False


# Readings kept for the summary. A command printing a line per step for hours (or `yes`, a
# million lines a second) would otherwise grow without bound: past this many, every other
# reading is dropped and from then on only every second one kept (then every fourth…), so the
# kept readings stay evenly spread over the whole run.
MAX_READINGS = 100_000
# Readings written into the stored result (evenly spaced over those kept).
MAX_STORED_READINGS = 1_000


@dataclass
class _Capture:
    readings: list[float]
    tail: list[str]
    seen: int = 0  # readings the command printed, kept or not
    stride: int = 1  # keep one reading in this many

    def add(self, value: float) -> None:
        if self.seen % self.stride == 0:
            self.readings.append(value)
            if len(self.readings) >= MAX_READINGS:
                del self.readings[1::2]
                self.stride *= 2
        self.seen += 1


def evenly_spaced(values: Sequence[float], most: int) -> list[float]:
    """At most ``most`` of ``values``, the first included, spread evenly over them all."""
    if len(values) <= most:
        return list(values)
    return [values[i * len(values) // most] for i in range(most)]


@dataclass
class _Readings:
    """What each known format read from the output, and the last lines for the failure message."""

    by_format: dict[str, _Capture]
    tail: list[str]

    def counts(self) -> dict[str, int]:
        return {name: capture.seen for name, capture in self.by_format.items()}


def _pump(
    stream: object,
    formats: tuple[LogFormat, ...],
    readings: _Readings,
    on_reading: Callable[[float, LogFormat], None] | None,
) -> None:
    counters = {f.name: CounterRate() for f in formats if f.counter}
    # Text mode reads "\r" as a line end, so each redraw of a tqdm bar is a line of its own.
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        arrived = time.monotonic()
        for log_format in formats:
            try:
                value = log_format.read(line)
            except (ValueError, OverflowError, ZeroDivisionError):
                value = None  # a garbled line never stops the reader: the pipe must keep draining
            if value is not None and log_format.counter:
                value = counters[log_format.name].reading(value, arrived)
            if value is not None and value == value and value != float("inf"):
                readings.by_format[log_format.name].add(value)
                if on_reading:
                    on_reading(value, log_format)
        readings.tail.append(line.rstrip("\n"))
        del readings.tail[:-40]


def run_command(
    argv: Sequence[str],
    *,
    pattern: str | None = None,
    duration_s: float | None = None,
    timeout_s: float = 3600.0,
    on_reading: Callable[[float, LogFormat], None] | None = None,
    batch_size: int | None = None,
    unit: str | None = None,
) -> Measurement:
    """Run ``argv``; after ``duration_s`` (if given) stop it and summarise what it reported.

    ``batch_size`` turns iterations and steps into samples; ``unit`` names what a ``pattern``'s
    number counts (samples by default).
    """
    if not argv or not argv[0]:
        raise PerdollarError("no command after --", "write e.g. perdollar bench -- python train.py")
    if unit is not None and unit not in UNITS:
        raise PerdollarError(f"unknown --unit {unit!r}", f"use one of {', '.join(UNITS)}")
    if unit is not None and pattern is None:
        raise PerdollarError("--unit names what a --pattern counts", "add --pattern REGEX, or drop --unit")
    if batch_size is not None and batch_size < 1:
        raise PerdollarError(f"--batch-size must be at least 1, got {batch_size}", "e.g. --batch-size 32")
    formats = (user_format(compile_pattern(pattern), unit or "samples"),) if pattern else KNOWN_FORMATS
    started_at = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    clock = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv),
            # Python buffers a pipe in 8 KiB blocks: its lines would arrive in bursts, and a step
            # counter's rate (the time between lines) would be the burst's, not the loop's.
            env={"PYTHONUNBUFFERED": "1", **os.environ},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
            preexec_fn=child_preexec(),
        )
    except OSError as error:
        raise PerdollarError(
            f"cannot start {argv[0]!r}: {error.strerror}", "check the command name and that it is executable"
        ) from error
    readings = _Readings({f.name: _Capture([], []) for f in formats}, [])
    reader = threading.Thread(target=_pump, args=(process.stdout, formats, readings, on_reading), daemon=True)
    reader.start()
    limit = min(duration_s, timeout_s) if duration_s else timeout_s
    stopped_by_us = False
    try:
        with termination_raises():  # SIGTERM/SIGHUP stop the command too, as Ctrl-C does
            process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        stopped_by_us = True
        _stop(process)
    except BaseException:
        _stop(process)  # its own session does not get the terminal's Ctrl-C
        raise
    reader.join(timeout=5)
    wall = time.monotonic() - clock
    chosen = best_format(readings.counts(), formats)
    capture = readings.by_format[chosen.name] if chosen else _Capture([], readings.tail)
    capture.tail = readings.tail
    status: Status = "ok"
    message = ""
    if stopped_by_us and not duration_s:
        status, message = "timeout", f"still running after the {timeout_s:.0f} s timeout"
    elif not stopped_by_us and process.returncode != 0:
        text = "\n".join(readings.tail)
        status = classify_failure(text)
        last = readings.tail[-1] if readings.tail else ""
        message = f"the command exited with code {process.returncode}" + (f": {last}" if last else "")
    elif chosen is None:
        status, message = "error", _nothing_read(formats, readings.tail, pattern)
    elif chosen.needs_batch_size and not batch_size:
        rate = sorted(capture.readings)[len(capture.readings) // 2]
        status = "error"
        message = (
            f"the log reports {chosen.name} (median {rate:.4g} {chosen.unit}/s), not samples; "
            f"give --batch-size N (samples per {chosen.unit[:-1]}) to count samples"
        )
    return _measurement(argv, chosen, capture, status, message, started_at, wall, batch_size)


def _nothing_read(formats: tuple[LogFormat, ...], tail: list[str], pattern: str | None) -> str:
    last = next((line.strip() for line in reversed(tail) if line.strip()), "")
    seen = f"; its last line: {last[:120]!r}" if last else "; it printed nothing"
    if pattern:
        return f"no line of the output matched --pattern {pattern!r}{seen}"
    return (
        f"no throughput in the output (looked for {KNOWN_FORMS}){seen} — pass --pattern REGEX --unit samples"
    )


def _stop(process: subprocess.Popen[str]) -> None:
    # SIGTERM first so a training script can flush its logs; SIGKILL if it will not go.
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _in_samples(values: list[float], log_format: LogFormat | None, batch_size: int | None) -> list[float]:
    if log_format is not None and log_format.needs_batch_size and batch_size:
        return [value * batch_size for value in values]
    return values


# Programs that run another program named among their arguments (python train.py, torchrun … train.py).
_LAUNCHERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|torchrun|accelerate|deepspeed|uv|poetry|pipenv|conda|"
                        r"env|bash|sh|mpirun|srun|composer|lightning|nohup|time)$")  # fmt: skip
_SCRIPT = re.compile(r"\.(py|sh|ipynb)$")


def command_name(argv: Sequence[str]) -> str:
    """What a person calls the command: its script (``train.py``), module (``-m pkg.train``) or program.

    ``python train.py`` and ``python finetune.py`` are different workloads; naming both ``python``
    would make every command run look alike in the history.
    """
    program = os.path.basename(argv[0]) if argv else "command"
    arguments = list(argv[1:])
    for index, argument in enumerate(arguments):
        if argument == "-m" and index + 1 < len(arguments):
            return arguments[index + 1]
        if argument == "-c":  # inline code has no name of its own
            return f"{program} -c"
        if _SCRIPT.search(argument) and not argument.startswith("-"):
            return os.path.basename(argument)
    if _LAUNCHERS.match(program):
        first = next((a for a in arguments if not a.startswith("-") and "=" not in a), None)
        if first is not None:
            return os.path.basename(first)
    return program


def _measurement(
    argv: Sequence[str],
    log_format: LogFormat | None,
    capture: _Capture,
    status: Status,
    message: str,
    started_at: str,
    wall: float,
    batch_size: int | None,
) -> Measurement:
    # What is stored and shown is redacted: the same command with another token is the same workload.
    command_line = shlex.join(redact_arguments(argv))
    values, reached = steady_readings(capture.readings)
    if log_format is not None and log_format.summary:
        values, reached = capture.readings[-1:], True  # the run's own figure: its last summary line
    values = _in_samples(values, log_format, batch_size)
    rate = cv = None
    warnings: tuple[str, ...] = ()
    if status == "ok" and values and log_format is not None and log_format.summary:
        rate = Rate(median=values[0], low=values[0], high=values[0])
        warnings = ("the figure is the run's own average over the whole run, warm-up included",)
    elif status == "ok" and values:
        summary = steady.summarize(values, [], steady_reached=reached)
        rate, cv, warnings = summary.rate, summary.cv, summary.warnings
    if status == "ok" and log_format is not None and not log_format.needs_batch_size and batch_size:
        warnings += (f"--batch-size {batch_size} was not needed: the log reports {log_format.unit}/s",)
    unit = "tokens" if log_format is not None and log_format.unit == "tokens" else "samples"
    return Measurement(
        status=status,
        mode="command",
        workload_name=f"command:{command_name(redact_arguments(argv))}",
        workload_fingerprint=hashlib.sha256(command_line.encode()).hexdigest()[:16],
        batch_size=batch_size or 0,
        precision="unknown",
        host=host_fingerprint(),
        started_at=started_at,
        samples_per_second=rate,
        cv=cv if cv is not None and cv == cv else None,
        warnings=warnings,
        message=redact_text(message)[:800],
        duration_s=round(wall, 2),
        extra={
            "command": command_line,
            "log_format": log_format.name if log_format else None,
            "pattern": log_format.pattern.pattern if log_format else None,
            "sample_unit": unit,
            "readings": evenly_spaced(capture.readings, MAX_STORED_READINGS),
            "readings_seen": capture.seen,
            "readings_used": len(values),
            "output_tail": [redact_text(line) for line in capture.tail[-10:]],
        },
    )
