"""``--csv``: the main table of a command's JSON document, one CSV row per item.

Every command that has ``--json`` takes ``--csv``: the same document is built and handed to
:func:`perdollar.cli.common.emit_json` with the name of its main table (``estimates``,
``deployments``, ``comparison.estimates`` …), which is written as CSV with nested fields flattened
to dotted column names (``samples_per_second.median``). A document without a table is one row; a
list is its own table. Column names keep the JSON's names, which carry their units
(``price_per_hour`` in USD/h, ``*_hours``, ``*_usd``).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import TextIO

from perdollar.errors import PerdollarError


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, Mapping):
        flat: dict[str, object] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}{key}."))
        return flat
    if isinstance(value, list):
        if all(not isinstance(item, Mapping | list) for item in value):
            return {prefix[:-1]: ";".join("" if item is None else str(item) for item in value)}
        return {prefix[:-1]: f"{len(value)} items (see --json)"}
    return {prefix[:-1]: value}


def table_rows(document: object, table: str | None) -> list[dict[str, object]]:
    """The rows of the document's table (``table`` a dotted path into it; None: the document)."""
    items = document
    for key in table.split(".") if table else ():
        if not isinstance(items, Mapping):
            raise PerdollarError(f"this command's output has no table {table!r}", "use --json")
        items = items.get(key) or []
    if isinstance(items, Mapping):
        items = [items]
    if not isinstance(items, list):
        raise PerdollarError("this command's output has no table to write as CSV", "use --json")
    return [_flatten(item) if isinstance(item, Mapping) else {"value": item} for item in items]


def write_csv(document: object, table: str | None, out: TextIO) -> None:
    rows = table_rows(document, table)
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: "" if value is None else value for key, value in row.items()})
