"""A fleet over a day is stored with its traffic, listed, asked again and reported from the store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_runner import run_perdollar
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
    assert old.question.traffic is not None and old.question.traffic.text == CURVE
    assert old.question.traffic.target_utilisation == 0.7  # the autoscaling policy is asked again too
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
