"""Hooks through which `bench`, `recommend` and `sweep` store their results.

The commands call these; the store stage implements them. Keeping them here means a command
module never opens a database itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from rich.markup import escape

from perdollar.cli.common import err_console
from perdollar.errors import PerdollarError

T = TypeVar("T")

if TYPE_CHECKING:  # types only: importing them would load pandas or the database driver at start-up
    from perdollar.catalog import Catalog
    from perdollar.measure.result import Measurement
    from perdollar.select.model import Recommendation
    from perdollar.store.store import Store


def check_store(store_url: str | None, *, enabled: bool = True) -> None:
    """Open (and so create or migrate) the store and probe a write before minutes of work whose
    result it must keep: a wrong URL or a read-only file is reported first, not after the
    measurement it would have lost."""
    if not enabled:
        return
    from perdollar.store import open_store

    with open_store(store_url) as store:
        store.check_writable()


def attempt_store(save: Callable[[], T]) -> tuple[T | None, PerdollarError | None]:
    """Run ``save``; a failure comes back (as a one-line error) instead of being raised, so that
    the command prints its result first and reports the lost write after it."""
    try:
        return save(), None
    except PerdollarError as error:
        return None, PerdollarError(f"the result above was not stored: {error.problem}", error.fix)
    except Exception as error:  # a database error after the work: never a traceback over the result
        reason = " ".join(str(getattr(error, "orig", error)).split())
        return None, PerdollarError(
            f"the result above was not stored ({type(error).__name__}: {reason})",
            "check that the store can be written, or pass --no-store",
        )


def save_measurement(
    measurement: Measurement, *, store_url: str | None, enabled: bool = True, source: str = "bench"
) -> str | None:
    """Store a :class:`~perdollar.measure.result.Measurement`; return its id (None if not stored)."""
    if not enabled:
        return None
    from perdollar.store import open_store

    with open_store(store_url) as store:
        return store.save_measurement(measurement, source=source)


def save_recommendation(
    recommendation: Recommendation,
    *,
    store_url: str | None,
    enabled: bool = True,
    catalog: Catalog | None = None,
) -> str | None:
    """Store a :class:`~perdollar.select.model.Recommendation` (and the prices it used); return its id."""
    if not enabled:
        return None
    from perdollar.store import open_store

    with open_store(store_url) as store:
        _save_catalog_snapshot(store, recommendation, catalog)
        return store.save_recommendation(recommendation)


def _save_catalog_snapshot(store: Store, recommendation: Recommendation, catalog: Catalog | None) -> None:
    """Keep the offers' prices beside the recommendation, so that a later re-evaluation can say
    which prices moved. Best effort: a recommendation is never lost because of its snapshot."""
    from perdollar.store.snapshots import offers_of

    try:
        if catalog is None:
            from perdollar.catalog import load

            catalog = load()
        if getattr(catalog, "snapshot_id", None) != recommendation.catalog_snapshot_id:
            return
        store.save_catalog_snapshot(catalog.snapshot_id, catalog.captured_at, offers_of(catalog))
    except Exception as error:
        err_console.print(
            f"[yellow]note:[/] the catalog snapshot was not stored ({escape(str(error))})", highlight=False
        )
