"""A fleet over a day is stored with its traffic, listed, asked again and reported from the store."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_perdollar
from perdollar.goals import FleetGoal
from perdollar.store import open_store

CURVE = "hour,requests_per_second\n0,4\n8,24\n20,10\n"


def _perdollar(store: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_perdollar(*args, env={"PERDOLLAR_STORE": store}, columns=250)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_fleet_is_stored_with_its_curve_and_asked_again_after_the_file_is_gone(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'results.db'}"
    curve = tmp_path / "day.csv"
    curve.write_text(CURVE)
    first = json.loads(_perdollar(
        store, "recommend", "llama-3.1-8b", "--inference", "--load-curve", str(curve),
        "--input-tokens", "1500", "--output-tokens", "300", "--ttft-p99-ms", "800", "--tpot-p99-ms", "50",
        "--cloud", "aws", "--target-utilisation", "0.7", "--json",
    ).stdout)  # fmt: skip
    stored = first["recommendation_id"]
    assert stored
    curve.unlink()  # asked again from the stored text, not the file

    listed = json.loads(_perdollar(store, "history", "--json").stdout)["entries"]
    (entry,) = [e for e in listed if e["id"] == stored]
    assert entry["kind"] == "recommendation" and "fleet of" in entry["summary"]

    again = json.loads(_perdollar(store, "history", "reevaluate", stored, "--json").stdout)
    assert again["new_id"] and not again["flipped"] and again["reasons"] == []
    # The same question against the same catalog: the same fleets, figure for figure.
    assert again["new"] == again["old"]
    assert again["old"]["fleet"]["usd_per_month"] == first["fleet"]["usd_per_month"]
    with open_store(store) as opened:
        old, new = opened.get_recommendation(stored), opened.get_recommendation(again["new_id"])
    assert isinstance(old.question.goal, FleetGoal) and old.question.goal.traffic.text == CURVE
    assert old.question.goal.traffic.target_utilisation == 0.7  # the autoscaling policy is asked again too
    assert new.question == old.question
    assert old.fleet is not None and new.fleet is not None
    assert new.fleet["intervals"] == old.fleet["intervals"] == first["intervals"]

    page = tmp_path / "last.html"
    _perdollar(store, "report", "--last", "-o", str(page))
    assert "Replicas over the day" in page.read_text()
    # A file that is not a report is replaced only on purpose, as with any other report.
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    refused = run_perdollar("report", "--last", "-o", str(notes), env={"PERDOLLAR_STORE": store})
    assert refused.returncode == 2 and "is not a perdollar report" in refused.stderr
    assert notes.read_text() == "mine"
    _perdollar(store, "report", "--last", "--force", "-o", str(notes))
    assert "Hour by hour" in notes.read_text()


@pytest.fixture(scope="module")
def fleet_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one fleet over a day, made by the real command."""
    folder = tmp_path_factory.mktemp("fleet")
    curve = folder / "day.csv"
    curve.write_text(CURVE)
    store = folder / "results.db"
    done = _perdollar(
        f"sqlite:///{store}", "recommend", "llama-3.1-8b", "--inference", "--load-curve", str(curve),
        "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--cloud", "aws", "--json",
    )  # fmt: skip
    return store, json.loads(done.stdout)["recommendation_id"]


def _damaged(payload: dict[str, Any], how: str) -> None:
    question, fleet = payload["question"], payload["fleet"]
    if how == "utilisation 0":
        question["traffic"]["target_utilisation"] = 0
    elif how == "text for a number":
        question["traffic"]["target_utilisation"] = "high"
    elif how == "missing figure":
        del fleet["fleet"]["usd_per_month"]
    elif how == "text figure":
        fleet["static_peak"]["usd_per_month"] = "lots"
    elif how == "no intervals":
        del fleet["intervals"]
    elif how == "unknown objective":
        question["objective"] = "carbn"
    elif how == "unknown market":
        question["market"] = "ondemand"
    elif how == "empty curve":
        question["traffic"]["text"] = "hour,requests_per_second\n"


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("utilisation 0", "--target-utilisation must be in [0.05, 1], got 0"),
        ("text for a number", "question.traffic.target_utilisation is 'high', not a number"),
        ("missing figure", "the fleet's fleet.usd_per_month is missing"),
        ("text figure", "the fleet's static_peak.usd_per_month is 'lots', not a number"),
        ("no intervals", "the fleet's intervals are missing"),
        ("unknown objective", "unknown objective 'carbn'"),
        ("unknown market", "--market 'ondemand' is not a market"),
        ("empty curve", "the file has a header ('hour,requests_per_second') and no rows"),
    ],
)
def test_a_damaged_stored_fleet_is_named_by_the_check_and_refused_in_one_line(
    fleet_store: tuple[Path, str], tmp_path: Path, how: str, words: str
) -> None:
    healthy, stored = fleet_store
    assert run_perdollar("history", "--check", store=healthy).returncode == 0
    store = tmp_path / "damaged.db"
    store.write_bytes(healthy.read_bytes())
    with sqlite3.connect(store) as connection:
        (text,) = connection.execute("select payload from recommendations where id = ?", (stored,)).fetchone()
        payload = json.loads(text)
        _damaged(payload, how)
        connection.execute(
            "update recommendations set payload = ? where id = ?", (json.dumps(payload), stored)
        )
    before = store.read_bytes()

    checked = run_perdollar("history", "--check", "--json", store=store)
    assert checked.returncode == 1, checked.stderr
    (row,) = json.loads(checked.stdout)["damaged"]
    assert row["id"] == stored and words in row["reason"]
    for command in (("history", "reevaluate"), ("history", "reevaluate", stored),
                    ("report", "--last", "-o", str(tmp_path / "r.html"))):  # fmt: skip
        done = run_perdollar(*command, store=store)
        assert done.returncode == 2, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        line = done.stderr.strip().splitlines()[-1]
        assert line.startswith(f"perdollar: error: stored row {stored} is damaged: ") and words in line
    assert store.read_bytes() == before  # nothing stored, nothing rewritten
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("field", "value"), [("duration_s", "long"), ("duration_s", None), ("requests_per_second", [4])]
)
def test_a_stored_fleet_whose_interval_figure_is_no_number_is_reported_in_one_line(
    fleet_store: tuple[Path, str], tmp_path: Path, field: str, value: object
) -> None:
    healthy, stored = fleet_store
    store = tmp_path / "damaged.db"
    store.write_bytes(healthy.read_bytes())
    with sqlite3.connect(store) as connection:
        (text,) = connection.execute("select payload from recommendations where id = ?", (stored,)).fetchone()
        payload = json.loads(text)
        payload["fleet"]["intervals"][0][field] = value
        connection.execute(
            "update recommendations set payload = ? where id = ?", (json.dumps(payload), stored)
        )
    page = tmp_path / "r.html"

    done = run_perdollar("report", "--last", "-o", str(page), store=store)

    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"the fleet's {field} is {str(value)!r}, not a number" in line
    assert not page.exists()
