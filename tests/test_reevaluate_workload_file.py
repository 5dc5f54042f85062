"""``history reevaluate`` of a question about a workload file runs that file's code only when the
user says so, and only if the file still builds the workload the question was stored for: a
question in a shared store may have been edited to name other code."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from cli_runner import run_perdollar

WORKLOAD = """\
import torch

from perdollar.workload import Workload


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, WIDTH, 3)

    def forward(self, x):
        return self.conv(x).mean()


def inputs(batch, device):
    return torch.randn(batch, 3, 8, 8, device=device)


def build():
    return Workload(name="small-cnn", model_factory=Model, input_factory=inputs, batch_size=4,
                    config={"width": WIDTH})
"""


def _asked(tmp_path: Path) -> tuple[Path, str, Path]:
    mine = tmp_path / "mine.py"
    mine.write_text("WIDTH = 4\n" + WORKLOAD)
    store = tmp_path / "store.sqlite"
    asked = run_perdollar("recommend", f"{mine}:build", "--samples", "1e6", "--cloud", "aws", "--json",
                          store=store)  # fmt: skip
    assert asked.returncode == 0, asked.stderr[-2000:]
    return mine, json.loads(asked.stdout)["id"], store


def _point_question_at(store: Path, recommendation: str, old: Path, new: Path) -> None:
    with sqlite3.connect(store) as db:
        query = "SELECT payload FROM recommendations WHERE id = ?"
        (payload,) = db.execute(query, (recommendation,)).fetchone()
        assert str(old) in payload
        db.execute("UPDATE recommendations SET payload = ? WHERE id = ?",
                   (payload.replace(str(old), str(new)), recommendation))  # fmt: skip


def _recommendations(store: Path) -> int:
    with sqlite3.connect(store) as db:
        return int(db.execute("SELECT count(*) FROM recommendations").fetchone()[0])


def test_an_edited_question_runs_no_code_without_the_users_word(tmp_path: Path) -> None:
    mine, recommendation, store = _asked(tmp_path)
    marker = tmp_path / "ran"
    planted = tmp_path / "planted.py"
    planted.write_text(f"open({str(marker)!r}, 'w').write('ran')\nWIDTH = 4\n" + WORKLOAD)
    _point_question_at(store, recommendation, mine, planted)
    refused = run_perdollar("history", "reevaluate", recommendation, store=store)
    assert refused.returncode == 2, refused.stderr
    assert "runs that file's code" in refused.stderr and "--run-workload-file" in refused.stderr
    assert str(planted) in refused.stderr
    assert not marker.exists()
    assert _recommendations(store) == 1


def test_a_file_that_now_builds_another_workload_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    mine, recommendation, store = _asked(tmp_path)
    mine.write_text("WIDTH = 8\n" + WORKLOAD)  # another model under the same name
    refused = run_perdollar("history", "reevaluate", recommendation, "--run-workload-file", store=store)
    assert refused.returncode == 2, refused.stderr
    assert "now builds another workload" in refused.stderr
    assert _recommendations(store) == 1


def test_the_same_file_is_asked_again_when_the_user_allows_it(tmp_path: Path) -> None:
    _mine, recommendation, store = _asked(tmp_path)
    again = run_perdollar(
        "history", "reevaluate", recommendation, "--run-workload-file", "--json", store=store
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["stored_id"] == recommendation
    assert _recommendations(store) == 2
