"""A narrow terminal never cuts the configuration: secondary columns go first, and the footnote says so."""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar, run_perdollar_in_terminal
from perdollar.terminal_tables import Column, fitted_table


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
    document = json.loads(run_perdollar(*args, "--json", "--no-store", columns=200).stdout)
    labels = [e["label"] for e in document["estimates"] if not e["excluded_reason"]][:10]
    for columns in (100, 80):
        completed = run_perdollar_in_terminal(*args, "--no-store", columns=columns)
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


COMPARE = ("compare", "vit-b16", "4x g5.2xlarge spot", "1x g5.12xlarge on-demand", "--samples", "1e8")
# The first word of each droppable header of compare's table; E[time] and E[cost] are never dropped.
DROPPABLE = ("nodes", "images/s", "bound", "$/h")


@pytest.mark.parametrize("columns", [100, 80, 60])
def test_compare_keeps_the_expected_cost_and_names_every_column_it_leaves_out(columns: int) -> None:
    completed = run_perdollar_in_terminal(*COMPARE, "--no-store", columns=columns)
    assert completed.returncode == 0, completed.stderr[-2000:]
    lines = completed.stdout.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert table and all(len(line) <= columns for line in table)
    header = " ".join(line for line in table if line.startswith("┃"))
    assert "E[time]" in header and "E[cost]" in header
    footnote = " ".join(lines[lines.index(table[-1]) + 1 : lines.index(table[-1]) + 4])
    for word in DROPPABLE:
        assert word in header or word in footnote, (columns, word, footnote)


def _why_not_text(stdout: str) -> str:
    """The excluded table's last column, wrapped lines joined back."""
    start = stdout.index("Excluded")
    cells = [line.split("│")[-2].strip() for line in stdout[start:].splitlines() if line.startswith("│")]
    return " ".join(cells)


def test_show_excluded_prints_every_reason_whole_at_any_width() -> None:
    args = ("recommend", "vit-b16", "--samples", "1e9", "--show-excluded")
    document = json.loads(run_perdollar(*args, "--json", "--no-store", columns=300).stdout)
    reasons = [e["excluded_reason"] for e in document["estimates"] if e["excluded_reason"]][:20]
    assert reasons and max(len(r) for r in reasons) > 60
    for columns in (200, 100):
        completed = run_perdollar_in_terminal(*args, "--no-store", columns=columns)
        assert completed.returncode == 0, completed.stderr[-2000:]
        assert all(len(line) <= columns for line in _table_lines(completed.stdout))
        shown = " ".join(_why_not_text(completed.stdout).split())
        for reason in reasons:
            assert " ".join(reason.split()) in shown, (columns, reason)


@pytest.mark.parametrize(
    "args",
    [
        ("predict", "gpt-125m", "--instance", "p4d.24xlarge"),
        ("catalog", "gpus"),
        ("catalog", "accelerators"),
    ],
    ids=["predict-llm-breakdown", "catalog-gpus", "catalog-accelerators"],
)
def test_a_table_too_wide_for_the_terminal_says_so_and_a_wide_one_does_not(args: tuple[str, ...]) -> None:
    narrow = run_perdollar_in_terminal(*args, columns=30)
    assert narrow.returncode == 0, narrow.stderr[-2000:]
    said = " ".join(narrow.stdout.split())
    assert "left out for the terminal's width" in said or "the table needs" in said
    assert "--json/--csv" in said
    assert not any("…" in line for line in narrow.stdout.splitlines() if line[:1] in "┃│")
    wide = run_perdollar_in_terminal(*args, columns=300)
    assert wide.returncode == 0 and "for the terminal's width" not in wide.stdout
    assert "the table needs" not in wide.stdout
    # Not a terminal (a file here): no width to fit, whatever COLUMNS says.
    piped = run_perdollar(*args, columns=30)
    assert piped.returncode == 0 and "terminal" not in piped.stdout


def test_fitted_tables_say_when_even_the_essential_columns_do_not_fit() -> None:
    name = Column("configuration", cells=["1x Standard_NC8ads_A10_v4 spot"])
    escaped = Column("E\\[cost]", "right", cells=["$1"])
    long_reason = "needs 10.2 GiB per device, has 2.7 GiB after 10% headroom"
    reason = Column("why not", wraps=True, cells=[long_reason])
    assert fitted_table(None, [name, escaped], width=200).footnote == ""
    # 30 + 7 ("E[cost]" as printed, not its markup) with their frames: 44 columns.
    assert fitted_table(None, [name, escaped], width=44).footnote == ""
    cut = fitted_table(None, [name, escaped], width=40)
    assert "the table needs 44 columns" in cut.footnote and "--json" in cut.footnote
    # A reason wraps between words instead of running past the edge.
    assert fitted_table(None, [name, reason], width=60).footnote == ""


def _printed_tables_without_a_word(path: Path) -> list[str]:
    """``.print(...)`` calls in ``path`` that hand Rich a table with nothing to say what it cut."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        tables = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                called = ast.unparse(node.value.func).rsplit(".", 1)[-1]
                if called == "Table" or called.endswith("_table"):
                    tables.update(t.id for t in node.targets if isinstance(t, ast.Name))
        source = ast.unparse(function)
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "print" or not node.args:
                continue
            printed = node.args[0]
            direct = isinstance(printed, ast.Name) and printed.id in tables
            built = isinstance(printed, ast.Call) and ast.unparse(printed.func).endswith("_table")
            fitted = isinstance(printed, ast.Attribute) and printed.attr == "table"
            unsaid = fitted and f"{ast.unparse(printed.value)}.footnote" not in source
            if direct or built or unsaid:
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_every_table_the_commands_print_says_what_the_width_cut() -> None:
    package = Path(__file__).resolve().parents[1] / "src" / "perdollar"
    sources = sorted([*(package / "cli").glob("*.py"), *(package / "report").glob("*.py")])
    offenders = [found for path in sources for found in _printed_tables_without_a_word(path)]
    assert offenders == [], "print these through print_table (or print the fitted table's footnote)"
