"""`perdollar history`, `report` and `history reevaluate` through the real command line."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from fixtures.store.samples import make_measurement, make_recommendation
from perdollar.store import open_store


def perdollar(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = run_perdollar(*args)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_history_lists_stored_results_as_table_and_json() -> None:
    assert "Nothing stored yet" in perdollar("history").stdout
    with open_store() as store:
        measurement_id = store.save_measurement(make_measurement())
        recommendation_id = store.save_recommendation(make_recommendation())
    table = perdollar("history").stdout
    assert measurement_id in table and recommendation_id in table and "g5.xlarge" in table
    listed = json.loads(perdollar("history", "--workload", "vit-b16", "--json").stdout)
    assert [e["id"] for e in listed["entries"]] == [recommendation_id]
    assert listed["entries"][0]["details"]["catalog_captured_at"] == "2026-06-01"


def test_report_of_the_last_recommendation_and_by_id(tmp_path: Path) -> None:
    with open_store() as store:
        first = store.save_recommendation(make_recommendation(workload="first"))
        store.save_recommendation(
            make_recommendation(workload="second", created_at="2026-07-01T00:00:00+00:00")
        )
        store.save_measurement(make_measurement(fingerprint="fp-vit-b16"))
    done = perdollar("report", "--last", "-o", str(tmp_path / "last.html"), "--json")
    assert json.loads(done.stdout)["path"] == str((tmp_path / "last.html").resolve())
    assert "where to run second" in (tmp_path / "last.html").read_text()
    perdollar("report", first[:6], "-o", str(tmp_path / "first.html"))
    page = (tmp_path / "first.html").read_text()
    assert "where to run first" in page
    # A measurement of the workload is stored, so the report carries the checklist with its evidence,
    # judged against the recommended instance (g5.xlarge: one 24 GiB A10G).
    assert "Not evaluated for this report" not in page
    assert "peak 238 MiB of 24 GiB (1%) at batch 64" in page


def test_bad_input_is_one_line_with_exit_code_2(tmp_path: Path) -> None:
    missing = perdollar("report", "nosuchid", "-o", str(tmp_path / "x.html"), check=False)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "no recommendation with id 'nosuchid'" in missing.stderr
    assert not (tmp_path / "x.html").exists()
    kind = perdollar("history", "--kind", "banana", check=False)
    assert kind.returncode == 2 and "unknown kind 'banana' for --kind" in kind.stderr
    assert "measurement, recommendation" in kind.stderr and len(kind.stderr.strip().splitlines()) == 1
    # --kind is a typed choice, refused as every other is: with the nearest kind, whatever the case.
    near = perdollar("history", "--kind", "measurment", check=False)
    assert near.returncode == 2 and "did you mean measurement?" in near.stderr
    assert perdollar("history", "--kind", "Measurement", "--json", check=False).returncode == 0
    bad_url = perdollar("history", "--store", "definitely not a url", check=False)
    assert bad_url.returncode == 2 and "not a SQLAlchemy URL" in bad_url.stderr


@pytest.mark.slow
def test_reevaluate_after_a_catalog_refresh_reports_the_flip_and_why() -> None:
    from perdollar.catalog import BUNDLED_SNAPSHOT, load
    from perdollar.catalog.snapshot_write import catalog_frames, write_snapshot
    from perdollar.paths import catalog_snapshot_dir

    stored = json.loads(
        perdollar(
            "recommend", "mlp", "--cloud", "aws", "--region", "us-east-1", "--market", "spot", "--json"
        ).stdout
    )
    ranked = [e for e in stored["estimates"] if not e["excluded_reason"]]
    top, runner_up = ranked[0], next(e for e in ranked if e["instance_type"] != ranked[0]["instance_type"])

    # A refreshed catalog in which the runner-up's spot price fell 40% (not below half its regions'
    # median, where it would be marked spot-far-below-peers and ranked after the rest).
    catalog = load()
    runner_up_offer = (runner_up["instance_type"], "us-east-1", "spot")
    cheaper = [
        dataclasses.replace(o, price_per_hour=o.price_per_hour * 0.6)
        if (o.instance_type, o.region, o.market) == runner_up_offer
        else o
        for o in catalog.offers
    ]
    frames = catalog_frames(catalog, offers=cheaper)
    manifest = json.loads((BUNDLED_SNAPSHOT / "manifest.json").read_text())
    manifest.update(snapshot_id="refreshed-test", captured_at=dt.date.today().isoformat())
    write_snapshot(catalog_snapshot_dir() / "20990101T000000Z", *frames, manifest)

    result = json.loads(perdollar("history", "reevaluate", stored["id"], "--json").stdout)
    assert result["flipped"] is True
    assert result["old_top"].startswith(f"1x {top['instance_type']} spot")
    assert runner_up["instance_type"] in result["new_top"]
    assert any(f"{runner_up['instance_type']} spot price fell 40% since" in r for r in result["reasons"])
    assert result["new_id"] and perdollar("history", "--json").stdout.count('"recommendation"') == 2


FILE_WORKLOAD = """\
import torch

from perdollar.workload import Workload


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x).mean()


def inputs(batch, device):
    return torch.randn(batch, 3, 8, 8, device=device)


def build():
    return Workload(name="small-cnn-64px", model_factory=Model, input_factory=inputs, batch_size=4)
"""


def _in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_perdollar(*args, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_a_file_workload_is_stored_under_one_name_and_replays_from_another_folder(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "my_cnn.py").write_text(FILE_WORKLOAD)
    # Asked and measured by a relative path, from the project's folder.
    _in(project, "recommend", "my_cnn.py:build", "--samples", "1e6", "--cloud", "aws")
    _in(project, "bench", "my_cnn.py:build", "--duration", "1")
    entries = json.loads(_in(elsewhere, "history", "--json").stdout)["entries"]
    assert sorted((e["kind"], e["workload_name"]) for e in entries) == [
        ("measurement", "small-cnn-64px"),
        ("recommendation", "small-cnn-64px"),
    ]
    assert (
        len(json.loads(_in(elsewhere, "history", "--workload", "small-cnn-64px", "--json").stdout)["entries"])
        == 2
    )
    recommendation = next(e["id"] for e in entries if e["kind"] == "recommendation")
    replayed = _in(elsewhere, "history", "reevaluate", recommendation, "--run-workload-file", "--json")
    assert json.loads(replayed.stdout)  # asked again from a folder where my_cnn.py is not


def test_commands_are_stored_under_their_scripts_name(tmp_path: Path) -> None:
    (tmp_path / "train_tiny.py").write_text("print('12.5 samples/s')\n")
    _in(tmp_path, "bench", "--duration", "1", "--", sys.executable, "-u", "train_tiny.py")
    _in(tmp_path, "bench", "--duration", "1", "--", sys.executable, "-c", "print('3 samples/s')")
    names = {e["workload_name"] for e in json.loads(_in(tmp_path, "history", "--json").stdout)["entries"]}
    assert names == {"command:train_tiny.py", f"command:{Path(sys.executable).name} -c"}


def test_history_names_the_host_as_the_bench_printed_it() -> None:
    bench = perdollar("bench", "mlp", "--duration", "1")
    headline = next(line for line in bench.stdout.splitlines() if " — measured on " in line)
    host = headline.split(" — measured on ", 1)[1].strip()
    listed = json.loads(perdollar("history", "--kind", "measurement", "--json").stdout)["entries"]
    assert f"on {host}," in perdollar("history").stdout
    assert f"on {host}," in listed[0]["summary"]
    assert [entry["details"]["measured_on"] for entry in listed] == [host]
