"""Numbers for people: honest significant figures, units, spreads and ratios.

Shared by every stage that prints (the CLI tables, the HTML report). A value with an
uncertainty is printed with as many digits as the uncertainty allows, the way
``torch.utils.benchmark`` and hyperfine do. URLs are shown with their secrets masked.
"""

from __future__ import annotations

import math
import re
from urllib.parse import urlsplit, urlunsplit


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


# Query parameters that carry secrets (?api_key=…, &access_token=…, &sig=…) and a URL inside free text.
_SECRET_WORDS = r"key|token|secret|passw|pwd|auth|sig|credential|session"
_SECRET_QUERY_NAME = re.compile(_SECRET_WORDS, re.IGNORECASE)
_SECRET_QUERY_PAIR = re.compile(rf"([?&][^=&#]*(?:{_SECRET_WORDS})[^=&#]*=)[^&#]*", re.IGNORECASE)
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
MASK = "***"


def _masked_pair(pair: str) -> str:
    name, equals, _ = pair.partition("=")
    return f"{name}={MASK}" if equals and _SECRET_QUERY_NAME.search(name) else pair


def mask_url(url: str) -> str:
    """``url`` as it may be printed or stored: user and password, and query values named like
    secrets, replaced by ``***`` (``http://user:pw@host/v1?api_key=k`` → ``http://***@host/v1?api_key=***``).
    The one place a URL is made safe to show; a malformed URL is masked by pattern."""
    try:
        parts = urlsplit(url)
    except ValueError:
        masked = re.sub(r"//[^/?#\s]*@", f"//{MASK}@", url)
        return _SECRET_QUERY_PAIR.sub(rf"\g<1>{MASK}", masked)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    # Each pair as it was written (no re-encoding of what is not a secret).
    query = "&".join(map(_masked_pair, parts.query.split("&"))) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_urls_in(text: str) -> str:
    """Free text (an HTTP library's error message) with every URL in it masked as :func:`mask_url` does."""
    return _URL_IN_TEXT.sub(lambda match: mask_url(match[0]), text)
