"""Numbers for people: honest significant figures, units, spreads and ratios.

Shared by every stage that prints (the CLI tables, the HTML report). A value with an
uncertainty is printed with as many digits as the uncertainty allows, the way
``torch.utils.benchmark`` and hyperfine do.
"""

from __future__ import annotations

import math


def significant_digits(value: float, spread: float | None) -> int:
    """Decimal places to show for ``value`` given an absolute uncertainty ``spread``."""
    if spread is None or spread <= 0 or not math.isfinite(spread):
        magnitude = math.floor(math.log10(abs(value))) if value else 0
        return max(0, 2 - magnitude)  # three significant figures when nothing is known
    return max(0, -math.floor(math.log10(spread)))


def singular(unit: str) -> str:
    """``tokens`` → ``token``, ``images`` → ``image``; a unit that is not a plural stays as it is."""
    return unit[:-1] if unit.endswith("s") and len(unit) > 1 else unit or "sample"


def format_number(value: float, spread: float | None = None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    places = significant_digits(value, spread)
    if abs(value) >= 1e6 and (spread is None or spread >= 1e4):
        return format_si(value)
    return f"{value:,.{places}f}"


def format_si(value: float) -> str:
    for threshold, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= threshold:
            return f"{value / threshold:.3g}{suffix}"
    return f"{value:.3g}"


def format_band(value: float, low: float | None, high: float | None, unit: str = "") -> str:
    """``1,234 (1,100 … 1,350) unit``: the central value with its band."""
    if low is None or high is None:
        text = format_number(value)
    else:
        spread = max(high - value, value - low) / 2 or None
        low_text, high_text = format_number(low, spread), format_number(high, spread)
        text = f"{format_number(value, spread)} ({low_text} … {high_text})"
    return f"{text} {unit}".rstrip()


def format_mean_sd(mean: float, sd: float, unit: str = "") -> str:
    """hyperfine style ``mean ± σ``."""
    return f"{format_number(mean, sd)} ± {format_number(sd, sd / 2 if sd else None)} {unit}".rstrip()


def format_money(usd: float | None) -> str:
    if usd is None or not math.isfinite(usd):
        return "—"
    if abs(usd) >= 100:
        return f"${usd:,.0f}"
    if abs(usd) >= 1:
        return f"${usd:,.2f}"
    return f"${usd:.3g}"


def format_hours(hours: float | None) -> str:
    if hours is None or not math.isfinite(hours):
        return "—"
    if hours < 1 / 60:
        return f"{hours * 3600:.0f} s"
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours / 24:.1f} d"


def format_ratio(ratio: float, ratio_sd: float | None, better: str, worse: str, other: str) -> str:
    """``1.8 ± 0.1 times cheaper than X``; flips the wording when the ratio is below one."""
    if ratio < 1:
        ratio, word = 1 / ratio, worse
        ratio_sd = ratio_sd * ratio * ratio if ratio_sd is not None else None
    else:
        word = better
    core = format_mean_sd(ratio, ratio_sd) if ratio_sd else f"{ratio:.2g}"
    return f"{core} times {word} than {other}"


def format_bytes(count: float) -> str:
    for threshold, suffix in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(count) >= threshold:
            return f"{count / threshold:.3g} {suffix}"
    return f"{count:.0f} B"


def least_table_width(table: object) -> int:
    """The fewest terminal columns a Rich table prints in without shortening or cropping a cell."""
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=100_000)
    return Measurement.get(console, console.options, table).minimum  # type: ignore[arg-type]


def cut_note(table: object, width: int, *, fuller: str = "use --json") -> str:
    """One line when ``width`` is too narrow to print ``table`` whole ('' when it is wide enough).

    Rich fits a table that is too wide by shortening cells with an ellipsis and cropping the
    right edge; the line says so, with the width that shows everything.
    """
    needed = least_table_width(table)
    if needed <= width:
        return ""
    return f"cells cut for the terminal's width (the table needs {needed} columns): widen it, or {fuller}"
