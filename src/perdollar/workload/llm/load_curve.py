"""Traffic over a day: a load curve (requests/s by hour) or a trace of requests, as intervals.

A serving fleet is sized interval by interval, so both inputs become a :class:`LoadCurve`: a
sequence of intervals, each with its request rate and its mix of request classes (short and
long requests need different machines). The formats a team can export:

* a load curve, CSV with the columns ``hour`` (0–23, or an ISO timestamp: rows are then averaged
  by hour of the day) and ``requests_per_second``; each rate holds until the next given hour, so
  three rows make a three-step day;
* a trace, CSV with ``arrival_s,input_tokens,output_tokens`` or JSON Lines with those keys, one
  request a row; it is cut into hourly intervals (one interval when shorter than an hour).
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from perdollar.errors import PerdollarError
from perdollar.workload.llm.request_lengths import json_lines

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
_CURVE_FIX = "give CSV with the columns hour (0-23 or an ISO timestamp) and requests_per_second"
_TRACE_FIX = "give CSV or JSON Lines with arrival_s, input_tokens and output_tokens for every request"
# Requests are split into a short and a long class when the long ones (90th percentile of the
# tokens a request holds) are at least this many times the short ones (10th percentile).
_SPLIT_SPREAD = 3.0


@dataclass(frozen=True, slots=True)
class RequestClass:
    """Requests of one shape: sized, routed and priced together."""

    name: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class Interval:
    start_s: float  # from the start of the curve
    duration_s: float
    requests_per_second: float
    shares: tuple[float, ...]  # of the requests in each class, summing to 1

    def class_rates(self) -> tuple[float, ...]:
        return tuple(self.requests_per_second * share for share in self.shares)


@dataclass(frozen=True, slots=True)
class TracedRequest:
    arrival_s: float
    request_class: int


@dataclass(frozen=True, slots=True)
class LoadCurve:
    """Intervals covering ``span_s`` seconds of traffic; a month is 30 repetitions of a day's."""

    classes: tuple[RequestClass, ...]
    intervals: tuple[Interval, ...]
    source: str
    requests: tuple[TracedRequest, ...] = ()  # the trace's own arrivals (empty for a curve)

    @property
    def span_s(self) -> float:
        return sum(interval.duration_s for interval in self.intervals)

    @property
    def peak_rps(self) -> float:
        return max(interval.requests_per_second for interval in self.intervals)

    @property
    def days(self) -> float:
        return self.span_s / SECONDS_PER_DAY

    def with_classes(self, classes: Sequence[RequestClass], shares: Sequence[float]) -> LoadCurve:
        """The same rates with another length mix in every interval."""
        total = sum(shares)
        mix = tuple(share / total for share in shares)
        intervals = tuple(
            Interval(i.start_s, i.duration_s, i.requests_per_second, mix) for i in self.intervals
        )
        return LoadCurve(tuple(classes), intervals, self.source, self.requests)


def _rows(text: str, fix: str) -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise PerdollarError("the file is empty", fix)
    if lines[0].lstrip().startswith("{"):
        return [{str(k).strip().lower(): str(v) for k, v in row.items()} for row in json_lines(lines, fix)]
    if len(lines) == 1:
        raise PerdollarError("the file has a header and no rows", fix)
    header = [cell.strip().lower() for cell in next(csv.reader([lines[0]]))]
    body = csv.reader(io.StringIO("\n".join(lines[1:])))
    return [dict(zip(header, (c.strip() for c in cells), strict=False)) for cells in body]


def _number(row: dict[str, str], column: str, where: str, fix: str) -> float:
    text = row.get(column)
    if text in (None, ""):
        raise PerdollarError(f"{where} has no {column}", fix)
    try:
        value = float(str(text))
    except ValueError:
        raise PerdollarError(f"{where}: {column} {str(text)[:40]!r} is not a number", fix) from None
    if not math.isfinite(value) or value < 0:
        raise PerdollarError(f"{where}: {column} must be a finite number ≥ 0, got {text}", fix)
    return value


def _hour_of_day(text: str, where: str) -> float:
    try:
        hour = float(text)
    except ValueError:
        try:
            stamp = datetime.fromisoformat(text.strip())
        except ValueError:
            raise PerdollarError(
                f"{where}: hour {text[:40]!r} is neither 0-23 nor an ISO timestamp", _CURVE_FIX
            ) from None
        return float(stamp.hour)
    if not 0 <= hour < 24 or hour != int(hour):
        raise PerdollarError(f"{where}: hour must be a whole hour from 0 to 23, got {text}", _CURVE_FIX)
    return hour


def parse_load_curve(text: str, request_class: RequestClass, source: str = "load curve") -> LoadCurve:
    """A day of rates from ``hour,requests_per_second`` rows (see the module docstring)."""
    rows = _rows(text, _CURVE_FIX)
    if "hour" not in rows[0] or "requests_per_second" not in rows[0]:
        raise PerdollarError(f"the header {sorted(rows[0])} lacks hour or requests_per_second", _CURVE_FIX)
    by_hour: dict[float, list[float]] = {}
    for number, row in enumerate(rows, 1):
        where = f"row {number}"
        hour = _hour_of_day(row.get("hour") or "", where)
        by_hour.setdefault(hour, []).append(_number(row, "requests_per_second", where, _CURVE_FIX))
    hours = sorted(by_hour)
    rates = [statistics.fmean(by_hour[hour]) for hour in hours]
    if not any(rate > 0 for rate in rates):
        raise PerdollarError("every requests_per_second is 0", "give the rates the service sees")
    starts = [hour * SECONDS_PER_HOUR for hour in hours]
    # Each rate holds until the next given hour; the last wraps round to the first.
    ends = [*starts[1:], starts[0] + SECONDS_PER_DAY]
    intervals = tuple(
        Interval(start, end - start, rate, (1.0,))
        for start, end, rate in zip(starts, ends, rates, strict=True)
    )
    return LoadCurve((request_class,), intervals, source)


def request_classes(lengths: Sequence[tuple[int, int]]) -> tuple[tuple[RequestClass, ...], list[int]]:
    """Short and long classes of (input, output) lengths, or one class where they are alike.

    Returns the classes (mean lengths of their members) and each request's class index.
    """
    totals = sorted(i + o for i, o in lengths)
    low = totals[int(0.1 * (len(totals) - 1))]
    high = totals[int(0.9 * (len(totals) - 1))]
    if low <= 0 or high < _SPLIT_SPREAD * low:
        members = [0] * len(lengths)
        names = ["all"]
    else:
        threshold = math.sqrt(low * high)
        members = [0 if i + o <= threshold else 1 for i, o in lengths]
        names = ["short", "long"]
    classes = []
    for index, name in enumerate(names):
        chosen = [pair for pair, member in zip(lengths, members, strict=True) if member == index]
        classes.append(RequestClass(
            name, max(1, round(statistics.fmean(p[0] for p in chosen))),
            max(1, round(statistics.fmean(p[1] for p in chosen))),
        ))  # fmt: skip
    return tuple(classes), members


def parse_trace(text: str, source: str = "trace", interval_s: float = SECONDS_PER_HOUR) -> LoadCurve:
    """Requests with arrival times and lengths, cut into intervals of ``interval_s``."""
    rows = _rows(text, _TRACE_FIX)
    arrivals: list[float] = []
    lengths: list[tuple[int, int]] = []
    for number, row in enumerate(rows, 1):
        where = f"request {number}"
        arrival = _number(row, "arrival_s", where, _TRACE_FIX)
        tokens_in = _number(row, "input_tokens", where, _TRACE_FIX)
        tokens_out = _number(row, "output_tokens", where, _TRACE_FIX)
        if tokens_out < 1 or tokens_out != int(tokens_out) or tokens_in != int(tokens_in):
            raise PerdollarError(f"{where}: token counts must be whole and output_tokens ≥ 1", _TRACE_FIX)
        arrivals.append(arrival)
        lengths.append((int(tokens_in), int(tokens_out)))
    if len(arrivals) < 2:
        raise PerdollarError("a trace needs at least two requests", _TRACE_FIX)
    if any(later < earlier for earlier, later in itertools.pairwise(arrivals)):
        raise PerdollarError("arrival_s goes backwards", "sort the requests by arrival_s")
    start, span = arrivals[0], arrivals[-1] - arrivals[0]
    if span <= 0:
        raise PerdollarError("every request arrives at the same moment", "give a trace that spans time")
    classes, members = request_classes(lengths)
    count = max(1, math.ceil(span / interval_s - 1e-9))
    width = span / count if count == 1 else interval_s
    tallies = [[0] * len(classes) for _ in range(count)]
    for arrival, member in zip(arrivals, members, strict=True):
        tallies[min(int((arrival - start) / width), count - 1)][member] += 1
    intervals = []
    for index, tally in enumerate(tallies):
        duration = min(width, span - index * width) if index == count - 1 else width
        total = sum(tally)
        shares = tuple(n / total for n in tally) if total else tuple(1 / len(classes) for _ in tally)
        intervals.append(Interval(index * width, duration, total / duration, shares))
    requests = tuple(TracedRequest(a - start, m) for a, m in zip(arrivals, members, strict=True))
    return LoadCurve(classes, tuple(intervals), source, requests)
