"""``--csv``: the main table of a command's JSON document, one CSV row per item.

Every command that has ``--json`` takes ``--csv``: the same document is built, and its main
list (the ranked estimates, the offers, the history rows …) is written as CSV with nested
fields flattened to dotted column names (``samples_per_second.median``). Column names keep the
JSON's names, which carry their units (``price_per_hour`` in USD/h, ``*_hours``, ``*_usd``).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import Any, TextIO

from perdollar.errors import PerdollarError

# The list a document is about, in the order they are looked for.
MAIN_LISTS = ("estimates", "deployments", "offers", "rows", "entries", "measurements", "jobs", "outcomes",
              "candidates", "accelerators", "flags", "items", "results")  # fmt: skip


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}{key}."))
        return flat
    if isinstance(value, list):
        if all(not isinstance(item, Mapping | list) for item in value):
            return {prefix[:-1]: ";".join("" if item is None else str(item) for item in value)}
        return {prefix[:-1]: f"{len(value)} items (see --json)"}
    return {prefix[:-1]: value}


def main_rows(document: Any) -> list[dict[str, Any]]:
    """The rows of the document's main list (or of the document when it is one record)."""
    if isinstance(document, list):
        items = document
    elif isinstance(document, Mapping):
        found = next((document[k] for k in MAIN_LISTS if isinstance(document.get(k), list)), None)
        if found is None:
            nested = [v for v in document.values() if isinstance(v, Mapping)]
            for inner in nested:  # e.g. compare's {"comparison": {"estimates": [...]}}
                found = next((inner[k] for k in MAIN_LISTS if isinstance(inner.get(k), list)), None)
                if found is not None:
                    break
        items = found if found is not None else [document]
    else:
        raise PerdollarError("this command's output has no table to write as CSV", "use --json")
    return [_flatten(item) if isinstance(item, Mapping) else {"value": item} for item in items]


def write_csv(document: Any, out: TextIO) -> None:
    rows = main_rows(document)
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: "" if value is None else value for key, value in row.items()})
