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
from perdollar.workload.llm.request_lengths import json_lines, more_lines_than

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
_CURVE_FIX = "give CSV with the columns hour (0-23 or an ISO timestamp) and requests_per_second"
_TRACE_FIX = "give CSV or JSON Lines with arrival_s, input_tokens and output_tokens for every request"
# Requests are split into a short and a long class when the long ones (90th percentile of the
# tokens a request holds) are at least this many times the short ones (10th percentile).
_SPLIT_SPREAD = 3.0

# The most perdollar reads of each file. A load curve of a year of rows a minute (525,600 rows of an
# ISO timestamp and a rate, about 25 bytes each) is 13 MB. A trace of a million requests is about
# 20 MB as CSV and 70 MB as JSON Lines (more with a few fields of its own); more requests than that
# take minutes and gigabytes to read, and a busier service is better described by its hourly
# rates (a load curve).
LOAD_CURVE_MAX_BYTES = 16 * 2**20
TRACE_MAX_BYTES = 128 * 2**20
TRACE_MAX_REQUESTS = 1_000_000
# A fleet sized for more than a million requests a second is tens of thousands of GPUs even for a
# small model; replaying it request by request outgrows what one command should take.
MAX_REQUESTS_PER_SECOND = 1e6
# A rate over less than a minute is a burst that queues inside the replicas already running (an
# instance takes minutes to start), not a rate a fleet is scaled to; a trace must span at least a
# minute, and a last partial hour shorter than that joins the hour before.
MIN_TRACE_SPAN_S = 60.0
# With n requests a rate is known to about 1/sqrt(n) (Poisson); 25 requests leave 20%, the
# headroom the default autoscaling target (80% of a replica's capacity) keeps. Fewer do not say
# how many replicas the traffic needs.
MIN_TRACE_REQUESTS = 25
# Hourly intervals over 400 days (a year and a month to spare) are 9,600: sized and replayed in
# about a minute. A longer trace is refused before its intervals are made.
MAX_TRACE_SPAN_S = 400 * 86_400.0


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


def _too_many_requests() -> PerdollarError:
    return PerdollarError(
        f"the trace has more than the {TRACE_MAX_REQUESTS:,} requests perdollar reads",
        "give a shorter span of it, or its hourly rates as --load-curve",
    )


def _rows(text: str, fix: str) -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise PerdollarError("the file is empty", fix)
    if lines[0].lstrip().startswith("{"):
        return [{str(k).strip().lower(): str(v) for k, v in row.items()} for row in json_lines(lines, fix)]
    if len(lines) == 1:
        raise PerdollarError(f"the file has a header ({lines[0].strip()[:60]!r}) and no rows", fix)
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
        rate = _number(row, "requests_per_second", where, _CURVE_FIX)
        if rate > MAX_REQUESTS_PER_SECOND:
            raise PerdollarError(
                f"{where}: requests_per_second {row['requests_per_second'][:40]} is more than the "
                f"{MAX_REQUESTS_PER_SECOND:,.0f} a fleet is sized for",
                "give the rate in requests per second",
            )
        by_hour.setdefault(hour, []).append(rate)
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


def _check_trace_extent(requests: int, span_s: float) -> None:
    """Refuse a trace too short or too sparse to have a rate, or too long to be cut into hours."""
    if requests < MIN_TRACE_REQUESTS:
        raise PerdollarError(
            f"the trace has {requests} requests, too few to have a rate (at least {MIN_TRACE_REQUESTS})",
            "give a longer trace, or the rate as --load-curve",
        )
    if span_s < MIN_TRACE_SPAN_S:
        raise PerdollarError(
            f"the trace spans {span_s:.3g} s, less than the {MIN_TRACE_SPAN_S:.0f} s a rate is taken over",
            "give a trace of at least a minute of traffic, or the rate as --load-curve",
        )
    if span_s > MAX_TRACE_SPAN_S:
        raise PerdollarError(
            f"the trace spans {span_s / SECONDS_PER_DAY:,.0f} days, more than the "
            f"{MAX_TRACE_SPAN_S / SECONDS_PER_DAY:.0f} perdollar cuts into hours",
            "give a shorter span of the trace (arrival_s in seconds), or its hourly rates as --load-curve",
        )


def parse_trace(text: str, source: str = "trace", interval_s: float = SECONDS_PER_HOUR) -> LoadCurve:
    """Requests with arrival times and lengths, cut into intervals of ``interval_s``."""
    # Lines are counted before any row is made; one may be a header, so the rows are counted again.
    if more_lines_than(text, TRACE_MAX_REQUESTS + 1):
        raise _too_many_requests()
    rows = _rows(text, _TRACE_FIX)
    if len(rows) > TRACE_MAX_REQUESTS:
        raise _too_many_requests()
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
    _check_trace_extent(len(arrivals), span)
    classes, members = request_classes(lengths)
    count = max(1, math.ceil(span / interval_s - 1e-9))
    if count > 1 and span - (count - 1) * interval_s < MIN_TRACE_SPAN_S:
        count -= 1  # a last sliver of an interval has no rate of its own: it joins the one before
    width = span / count if count == 1 else interval_s
    tallies = [[0] * len(classes) for _ in range(count)]
    for arrival, member in zip(arrivals, members, strict=True):
        tallies[min(int((arrival - start) / width), count - 1)][member] += 1
    intervals = []
    for index, tally in enumerate(tallies):
        duration = span - index * width if index == count - 1 else width
        total = sum(tally)
        shares = tuple(n / total for n in tally) if total else tuple(1 / len(classes) for _ in tally)
        intervals.append(Interval(index * width, duration, total / duration, shares))
    requests = tuple(TracedRequest(a - start, m) for a, m in zip(arrivals, members, strict=True))
    return LoadCurve(classes, tuple(intervals), source, requests)
