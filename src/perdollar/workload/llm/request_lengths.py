"""Prompt and output lengths of real requests, read from a file, summarised for serving plans.

A serving plan sized on one request shape is wrong when lengths vary: capacity follows the mean
output length (tokens generated per request), the KV cache the mean context, and the slowest
requests the tail. The file is what a team can export from its logs:

* CSV with a header holding ``output_tokens`` (and optionally ``input_tokens``), one request a row;
* JSON Lines, one object a line with the same keys;
* or a bare column of numbers (output tokens), one a line.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perdollar.errors import PerdollarError

_FIX = "give CSV with an output_tokens column (input_tokens optional), JSON Lines, or one number a line"
# The most requests read: a million rows take seconds and a few hundred megabytes to read; a file of
# one short number a line could otherwise hold tens of millions in the bytes perdollar reads.
MAX_REQUESTS = 1_000_000


def more_lines_than(text: str, limit: int) -> bool:
    """Whether ``text`` has more than ``limit`` lines that are not blank, counted without making them."""
    return text.count("\n") + 1 > limit and sum(1 for line in io.StringIO(text) if line.strip()) > limit


@dataclass(frozen=True, slots=True)
class LengthSummary:
    mean: float
    p50: float
    p99: float
    largest: int


@dataclass(frozen=True, slots=True)
class RequestLengths:
    """Lengths of ``requests`` requests; ``input`` is None when the file gave output lengths only."""

    requests: int
    output: LengthSummary
    input: LengthSummary | None

    def describe(self, source: str) -> str:
        def one(name: str, summary: LengthSummary) -> str:
            return (f"{name} mean {summary.mean:.0f} (p50 {summary.p50:.0f}, p99 {summary.p99:.0f}, "
                    f"largest {summary.largest}) tokens")  # fmt: skip

        parts = [one("output", self.output)] + ([one("input", self.input)] if self.input else [])
        return (f"request lengths from {source}: {self.requests:,} requests; {'; '.join(parts)}. "
                "Capacity and cost are planned on the means; a p99-length request takes about "
                "TTFT + p99 output × TPOT from end to end.")  # fmt: skip


def _summary(values: Sequence[int]) -> LengthSummary:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    return LengthSummary(statistics.fmean(ordered), statistics.median(ordered), p99, ordered[-1])


def _count(text: object, what: str, where: str) -> int:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise PerdollarError(f"{where}: {what} {str(text)[:40]!r} is not a number", _FIX) from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise PerdollarError(f"{where}: {what} must be a whole number of tokens ≥ 0, got {text}", _FIX)
    return int(value)


def json_lines(lines: list[str], fix: str) -> list[dict[str, object]]:
    """One JSON object a line (JSON Lines), or a one-line error naming the first line that is not."""
    rows = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except RecursionError:
            raise PerdollarError(f"line {number} nests its JSON too deeply to read", fix) from None
        except ValueError:  # not JSON, or a number of more digits than Python converts
            raise PerdollarError(f"line {number} is not a JSON object", fix) from None
        if not isinstance(row, dict):
            raise PerdollarError(f"line {number} is not a JSON object", fix)
        rows.append(row)
    return rows


def _too_many_requests() -> PerdollarError:
    return PerdollarError(
        f"the file has more than the {MAX_REQUESTS:,} requests perdollar reads",
        "give a sample of the requests: their mean lengths are what the plan needs",
    )


def _rows(text: str) -> list[dict[str, object]]:
    # Lines are counted before any row is made; one may be a header, so the rows are counted again.
    if more_lines_than(text, MAX_REQUESTS + 1):
        raise _too_many_requests()
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise PerdollarError("the request-lengths file is empty", _FIX)
    if lines[0].lstrip().startswith("{"):
        return json_lines(lines, _FIX)
    header = [cell.strip().lower() for cell in next(csv.reader([lines[0]]))]
    if "output_tokens" in header:
        body = csv.reader(io.StringIO("\n".join(lines[1:])))
        return [dict(zip(header, cells, strict=False)) for cells in body]
    if len(header) > 1 or not header[0].replace(".", "", 1).isdigit():
        raise PerdollarError(f"the header ({lines[0].strip()[:60]!r}) has no output_tokens column", _FIX)
    return [{"output_tokens": line.strip()} for line in lines]


def parse_request_lengths(text: str) -> RequestLengths:
    """The summary of the lengths in ``text`` (see the module docstring for the formats)."""
    outputs: list[int] = []
    inputs: list[int] = []
    rows = _rows(text)
    if len(rows) > MAX_REQUESTS:
        raise _too_many_requests()
    for number, row in enumerate(rows, 1):
        if "output_tokens" not in row or row["output_tokens"] in (None, ""):
            raise PerdollarError(f"request {number} has no output_tokens", _FIX)
        outputs.append(_count(row["output_tokens"], "output_tokens", f"request {number}"))
        if row.get("input_tokens") not in (None, ""):
            inputs.append(_count(row["input_tokens"], "input_tokens", f"request {number}"))
    if inputs and len(inputs) != len(outputs):
        raise PerdollarError("some requests give input_tokens and others do not", "give it for all or none")
    if not any(outputs):
        raise PerdollarError("every request generates 0 tokens", "give the output lengths of real requests")
    return RequestLengths(len(outputs), _summary(outputs), _summary(inputs) if inputs else None)
