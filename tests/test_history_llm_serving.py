"""A language model's serving recommendation is asked again, reported and listed by what it ranks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_runner import run_perdollar
from perdollar.store import open_store

QUESTION = ("llama-3.1-8b", "--inference", "--rps", "5", "--input-tokens", "1000", "--output-tokens", "200",
            "--cloud", "aws")  # fmt: skip


def perdollar(*args: str) -> subprocess.CompletedProcess[str]:
    done = run_perdollar(*args)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_history_reevaluate_asks_a_language_model_serving_question_again(tmp_path: Path) -> None:
    stored = json.loads(perdollar("recommend", *QUESTION, "--json").stdout)["recommendation_id"]
    listed = json.loads(perdollar("history", "--json").stdout)["entries"]
    (entry,) = [e for e in listed if e["id"] == stored]
    assert "usd-per-million-tokens" in json.dumps(entry) and "per-million-requests" not in json.dumps(entry)

    again = json.loads(perdollar("history", "reevaluate", stored, "--json").stdout)
    assert again["new_id"] and not again["flipped"]
    # Nothing moved: the same catalog snapshot cannot show a price move (an excluded machine's
    # price once counted one instance over the instances it would have needed).
    assert again["price_moves"] == [] and again["reasons"] == []
    with open_store() as store:
        old, new = store.get_recommendation(stored), store.get_recommendation(again["new_id"])
    # The same question against the same catalog: the same deployments, figure for figure.
    assert new.question == old.question and len(new.estimates) == len(old.estimates) > 0
    for before, after in zip(old.estimates, new.estimates, strict=True):
        assert after.label == before.label
        assert after.price_per_hour == before.price_per_hour
        assert after.samples_per_second == before.samples_per_second

    perdollar("report", "--last", "-o", str(tmp_path / "last.html"))
    assert old.estimates[0].instance_type in (tmp_path / "last.html").read_text()
