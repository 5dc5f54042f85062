"""Tables never cut a figure or a name: written whole where stdout is not a terminal (a pipe, a
file), and on a narrow terminal left out a whole column at a time, with a line that names it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar, run_perdollar_in_terminal
from perdollar.fmt import format_hours, format_money, format_number, format_si


def _first_table(stdout: str) -> tuple[list[str], list[str]]:
    """(header lines, body lines) of the first table printed."""
    lines = stdout.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    bottom = next(i for i in range(top, len(lines)) if lines[i].startswith("└"))
    table = lines[top:bottom]
    return [line for line in table if line.startswith("┃")], [line for line in table if line.startswith("│")]


def _cells(line: str, bar: str) -> list[str]:
    return [cell.strip() for cell in line.split(bar)[1:-1]]


def _columns(stdout: str) -> dict[str, list[str]]:
    """Each column's header (its lines joined) → the words of its cells, top to bottom."""
    header, body = _first_table(stdout)
    names = [" ".join(parts).split() for parts in zip(*(_cells(line, "┃") for line in header), strict=True)]
    words = [" ".join(parts).split() for parts in zip(*(_cells(line, "│") for line in body), strict=True)]
    return {" ".join(name): column for name, column in zip(names, words, strict=True)}


def _rows(stdout: str, starts: int = 0) -> list[list[str]]:
    """The body's rows (a row starts where its cell in column ``starts`` is filled), each cell's
    lines joined."""
    _, body = _first_table(stdout)
    rows: list[list[list[str]]] = []
    for line in body:
        cells = _cells(line, "│")
        if cells[starts]:
            rows.append([[] for _ in cells])
        for parts, cell in zip(rows[-1], cells, strict=True):
            if cell:
                parts.append(cell)
    return [[" ".join(parts) for parts in row] for row in rows]


def _compact(value: float) -> str:
    # The ranked table's throughput: SI above 10k, else the plain number.
    return format_si(value) if abs(value) >= 1e4 else format_number(value)


def test_piped_recommendation_prints_every_figure_of_the_json_answer_whole() -> None:
    args = ("recommend", "vit-b16", "--samples", "1e9", "--no-store")
    document = json.loads(run_perdollar(*args, "--json", columns=80).stdout)
    # `| cat` from an 80-column terminal: stdout is a file, COLUMNS says 80.
    piped = run_perdollar(*args, columns=80)
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert "left out" not in piped.stdout and "the table needs" not in piped.stdout
    feasible = [e for e in document["estimates"] if e["feasible"]][:10]
    rows = _rows(piped.stdout)
    assert len(rows) == len(feasible) == 10
    for row, estimate in zip(rows, feasible, strict=True):
        _rank, configuration, nodes, rate, bound, price, per_dollar, to_target, energy = row
        assert configuration.replace(" ⚠", "") == estimate["label"]
        per_node = estimate["accelerators_per_node"]
        chips = estimate["nodes"] * per_node
        assert nodes == f"{chips:g}× {estimate['accelerator']} ({estimate['nodes']} × {per_node:g})"
        low, high = estimate["samples_per_second_low"], estimate["samples_per_second_high"]
        band = f"({_compact(low)}–{_compact(high)})"
        assert rate == f"{_compact(estimate['samples_per_second'])} {band} {estimate['basis']}"
        assert bound == estimate["bottleneck"]
        assert price.split()[0] == format_money(estimate["price_per_hour"])
        if estimate["captured_at"] != document["catalog_captured_at"]:
            assert estimate["captured_at"] in price.split()
        assert per_dollar == format_number(estimate["effective_samples_per_dollar"])
        spot = "E " if estimate["market"] == "spot" else ""
        assert to_target == (
            f"{spot}{format_hours(estimate['expected_time_hours'])} {spot}"
            f"{format_money(estimate['expected_cost_usd'])}"
        )
        if estimate["energy_kwh"] is None:
            assert energy == "— —"
        else:
            assert energy == f"{format_number(estimate['energy_kwh'])} {format_number(estimate['carbon_kg'])}"


def _load_curve(folder: Path) -> Path:
    path = folder / "day.csv"
    path.write_text("hour,requests_per_second\n" + "".join(f"{h},{h % 12 + 1}\n" for h in range(0, 24, 4)))
    return path


QUESTIONS = {
    "training": ("recommend", "vit-b16", "--samples", "1e9", "--no-store"),
    "language-model serving": ("recommend", "llama-3.1-8b", "--inference", "--rps", "5", "--no-store"),
    "serving": ("recommend", "resnet50", "--inference", "--qps", "200", "--p99-ms", "50", "--no-store"),
    "fleet": ("recommend", "llama-3.1-8b", "--inference", "--load-curve", "{curve}", "--no-store"),
    "compare": (
        "compare",
        "vit-b16",
        "4x g5.2xlarge spot",
        "1x g5.12xlarge on-demand",
        "--samples",
        "1e8",
        "--no-store",
    ),
    "catalog": ("catalog", "--accelerator", "a10g"),
    "catalog gpus": ("catalog", "gpus"),
    "history": ("history",),
    "predict": ("predict", "vit-b16", "--instance", "g5.12xlarge"),
}


@pytest.mark.parametrize("kind", list(QUESTIONS))
def test_an_80_column_terminal_leaves_out_whole_columns_and_names_them(kind: str, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    if kind == "history":
        assert run_perdollar(*QUESTIONS["training"][:-1], store=store).returncode == 0
    args = [a.replace("{curve}", str(_load_curve(tmp_path))) for a in QUESTIONS[kind]]
    whole = run_perdollar(*args, store=store, columns=300)
    narrow = run_perdollar_in_terminal(*args, store=store, columns=80)
    assert whole.returncode == narrow.returncode == 0, narrow.stderr[-2000:]
    every, shown = _columns(whole.stdout), _columns(narrow.stdout)
    # What is shown is what the whole table says, word for word: wrapped between words, never cut.
    for header, words in shown.items():
        assert words == every[header], (kind, header)
    note = " ".join(narrow.stdout.split()).split("left out for the terminal's width: ", 1)
    left_out = [header for header in every if header not in shown]
    if left_out:
        assert len(note) == 2 and "--json/--csv" in note[1], kind
        for header in left_out:
            assert header in note[1], (kind, header)
    else:
        assert len(note) == 1, kind
    assert all(len(line) <= 80 for line in narrow.stdout.splitlines() if line[:1] in "┏┃┡│└"), kind


def test_compare_shows_the_region_and_the_flag_of_each_price_it_used() -> None:
    # A region whose spot price the catalog flags (estimated from the Spot Advisor): the flag is shown.
    flagged = "4x g5.2xlarge spot @il-central-1"
    args = ("compare", "vit-b16", flagged, "1x g5.12xlarge on-demand", "--samples", "1e8")
    estimates = json.loads(run_perdollar(*args, "--no-store", "--json").stdout)["comparison"]["estimates"]
    assert any(e["flags"] for e in estimates) and all(e["region"] for e in estimates)
    done = run_perdollar(*args, "--no-store")
    assert done.returncode == 0, done.stderr[-2000:]
    shown = [row[0] for row in _rows(done.stdout, starts=-1)]
    for cell, estimate in zip(shown, estimates, strict=True):
        # "4x g5.2xlarge spot ⚠ (aws ap-southeast-3)": the offer priced, flagged where the catalog flags it.
        mark = " ⚠" if estimate["flags"] else ""
        assert cell == estimate["label"].replace(" (", f"{mark} (", 1)
    said = " ".join(done.stdout.split())
    for flag in {flag for e in estimates for flag in e["flags"]}:
        assert f"⚠ flags shown: {flag}" in said


def test_language_model_serving_compare_names_the_flag_of_each_price_it_used() -> None:
    flagged = "g5.2xlarge spot @il-central-1"
    args = ("compare", "llama-3.1-8b", "--inference", "--rps", "5", flagged, "g6.xlarge spot")
    rows = json.loads(run_perdollar(*args, "--no-store", "--json").stdout)["candidates"]
    assert [bool(r["flags"]) for r in rows] == [True, False]
    done = run_perdollar(*args, "--no-store")
    assert done.returncode == 0, done.stderr[-2000:]
    deployments = [row[2] for row in _rows(done.stdout, starts=-1)]
    for cell, row in zip(deployments, rows, strict=True):
        assert cell.startswith(row["deployment"] + (" ⚠," if row["flags"] else ","))
    assert f"⚠ flags shown: {', '.join(rows[0]['flags'])}" in " ".join(done.stdout.split())


def test_a_missing_energy_figure_is_explained_under_the_table() -> None:
    args = ("recommend", "vit-b16", "--samples", "1e9", "--cloud", "aws", "--market", "on-demand")
    args = (*args, "--no-store")
    document = json.loads(run_perdollar(*args, "--json").stdout)
    shown = [e for e in document["estimates"] if e["feasible"]][:10]
    unpowered = sorted({e["accelerator"] for e in shown if e["energy_kwh"] is None})
    assert unpowered  # the question keeps a row without a power figure (A10G on g5)
    done = run_perdollar(*args)
    assert any(row[-1] == "— —" for row in _rows(done.stdout))
    said = " ".join(done.stdout.split())
    assert f"the accelerator specs give no power figure (TDP) for {', '.join(unpowered)}" in said
