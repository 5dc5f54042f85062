"""How old a price is, and when it is too old to trust without a refresh."""

from __future__ import annotations

import datetime as dt
import os

STALE_AFTER_DAYS = 30
STALE_ENV = "PERDOLLAR_STALE_PRICE_DAYS"  # overrides STALE_AFTER_DAYS


def stale_after_days() -> int:
    """Days after which a price counts as stale (``PERDOLLAR_STALE_PRICE_DAYS``, default 30)."""
    text = os.environ.get(STALE_ENV, "").strip()
    try:
        return max(int(text), 0) if text else STALE_AFTER_DAYS
    except ValueError:
        return STALE_AFTER_DAYS


def _date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(str(text)[:10])
    except ValueError:
        return None


def price_age_days(captured_at: str, on: str | dt.date) -> int | None:
    """Whole days from a price's capture date to ``on`` (a date, or an ISO timestamp); None if unknown."""
    captured = _date(captured_at)
    day = on if isinstance(on, dt.date) else _date(on)
    return None if captured is None or day is None else (day - captured).days


def is_stale(captured_at: str, on: str | dt.date, threshold: int | None = None) -> bool:
    age = price_age_days(captured_at, on)
    return age is not None and age > (stale_after_days() if threshold is None else threshold)


def price_date_note(captured_at: str, catalog_captured_at: str, on: str | dt.date) -> str:
    """ "" when the price is as new as the snapshot; else its date, marked stale when it is."""
    if not captured_at or captured_at[:10] == str(catalog_captured_at)[:10]:
        return ""
    return f"price {captured_at[:10]}" + (" stale" if is_stale(captured_at, on) else "")


def age_sentence(captured_at: str, on: str | dt.date) -> str:
    """The explanation's sentence on the top choice's price age."""
    age = price_age_days(captured_at, on)
    if age is None:
        return ""
    threshold = stale_after_days()
    sentence = f"Its price was captured {captured_at[:10]} ({age} days before this recommendation)"
    if age > threshold:
        return f"{sentence}: stale (older than {threshold} days); refresh with `perdollar catalog refresh`."
    return sentence + "."
