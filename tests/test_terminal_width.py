"""A narrow terminal never cuts the configuration: secondary columns go first, and the footnote says so."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import pytest

from perdollar.report.fit import Column, fitted_table


def _perdollar(*args: str, columns: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from perdollar.cli import main; main()", *args, "--no-store"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": str(columns)},
    )  # fmt: skip


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


@pytest.mark.parametrize(
    "args",
    [
        ("recommend", "vit-b16", "--samples", "1e9"),
        ("recommend", "llama-3.1-8b", "--tokens", "2e10", "--deadline", "7d"),
    ],
    ids=["vit-b16", "llama-3.1-8b"],
)
def test_every_configuration_prints_whole_at_100_and_80_columns(args: tuple[str, ...]) -> None:
    document = json.loads(_perdollar(*args, "--json", columns=200).stdout)
    labels = [e["label"] for e in document["estimates"] if not e["excluded_reason"]][:10]
    for columns in (100, 80):
        completed = _perdollar(*args, columns=columns)
        assert completed.returncode == 0, completed.stderr[-2000:]
        rows = _table_lines(completed.stdout)
        assert rows and not any("…" in row for row in rows)
        assert all(len(row) <= columns for row in rows)
        cells = [[cell.strip() for cell in row.split("│")[1:-1]] for row in rows]
        configuration = [row[1] for row in cells]
        # Each label is printed on two lines: "2x p5.48xlarge spot" over "(aws eu-north-1) with …".
        printed = [f"{a} {b}".replace(" ⚠ ", " ") for a, b in itertools.pairwise(configuration)]
        for label in labels:
            assert label in printed, (columns, label)
        assert "left out for the terminal's width" in completed.stdout


def test_columns_are_left_out_in_their_declared_order_and_only_when_needed() -> None:
    name = Column("configuration", cells=["1x Standard_NC8ads_A10_v4 spot"])
    first = Column("bound by", drop_order=2, cells=["memory-bandwidth"])
    second = Column("nodes", drop_order=1, cells=["1× 8×H100-SXM5-80GB"])
    wide = fitted_table(None, [name, first, second], width=200)
    assert wide.left_out == () and wide.footnote == ""
    # configuration 30 + 3, bound by 16 + 3, nodes 16 + 3, one border: 72 in all.
    assert fitted_table(None, [name, first, second], width=72).left_out == ()
    assert fitted_table(None, [name, first, second], width=71).left_out == ("bound by",)
    assert fitted_table(None, [name, first, second], width=40).left_out == ("bound by", "nodes")
    narrow = fitted_table(None, [name, first, second], width=10)
    assert len(narrow.table.columns) == 1 and narrow.table.columns[0].no_wrap
