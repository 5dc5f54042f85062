"""Task files are data: a workload name cannot add YAML keys, and a shared store's password is
never written into a task file or a job's command line."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.local import LocalExecutor
from perdollar.launch.skypilot import task_config, task_yaml
from perdollar.launch.spec import STORE_SECRET
from perdollar.store import open_store
from test_launch_jobs import make_estimate

EVIL_NAME = "train\nfile_mounts:\n  /root/.ssh: ~/.ssh\n#.py:workload"
PASSWORD = "hunter2-not-for-files"
REMOTE_STORE = f"postgresql+psycopg://perdollar:{PASSWORD}@db.example.internal/results"


def _job(workload: str = "mlp", remote_store_url: str | None = None, market: str = "on-demand"):
    options = JobOptions(workload=workload, duration_s=60, remote_store_url=remote_store_url)
    return job_for_estimate(make_estimate("g5.xlarge", 120, 1.006, market=market), 0, options)


def test_a_newline_in_a_workload_name_adds_no_yaml_key() -> None:
    job = _job(EVIL_NAME)
    text = task_yaml(job)
    parsed = yaml.safe_load(text)
    assert "file_mounts" not in parsed
    assert parsed == task_config(job)
    header = text[: text.index("name:")]
    assert all(line.startswith("# ") for line in header.splitlines())
    assert "train\\nfile_mounts" in header  # shown escaped, on its comment line


def test_a_remote_store_password_is_a_secret_reference_not_text() -> None:
    for market in ("on-demand", "spot"):
        job = _job(remote_store_url=REMOTE_STORE, market=market)
        text = task_yaml(job)
        assert PASSWORD not in text and "db.example.internal" not in text
        parsed = yaml.safe_load(text)
        assert parsed["secrets"] == {STORE_SECRET: None}
        assert "--store" not in parsed["run"] and "--no-store" not in parsed["run"]
        assert f"--secret {STORE_SECRET}" in text
    without = yaml.safe_load(task_yaml(_job()))
    assert "secrets" not in without and "--no-store" in without["run"]


def test_skypilot_reads_the_secret_reference(tmp_path: Path) -> None:
    sky_python = os.environ.get("PERDOLLAR_TEST_SKYPILOT_PYTHON", sys.executable)
    if subprocess.run([sky_python, "-c", "import sky"], capture_output=True).returncode != 0:
        pytest.skip("SkyPilot is not installed")
    path = tmp_path / "task.yaml"
    path.write_text(task_yaml(_job(remote_store_url=REMOTE_STORE)))
    # As `sky launch --secret PERDOLLAR_STORE FILE` does: the value comes from the launching side.
    script = (
        "import json, sys, sky, yaml\n"
        "config = yaml.safe_load(open(sys.argv[1]))\n"
        "ns = list(config['secrets'])\n"
        "task = sky.Task.from_yaml_config(config, secrets_overrides=[(n, 'given-at-launch') for n in ns])\n"
        "secrets = {k: getattr(v, 'get_secret_value', lambda v=v: v)() for k, v in task.secrets.items()}\n"
        "print(json.dumps({'secrets': secrets, 'run': task.run}))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "SKY_RUNTIME_DIR": str(tmp_path)}
    done = subprocess.run(
        [sky_python, "-c", script, str(path)], capture_output=True, text=True, env=env, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    read = json.loads(done.stdout.strip().splitlines()[-1])
    assert read["secrets"] == {STORE_SECRET: "given-at-launch"}
    assert PASSWORD not in read["run"]


@pytest.mark.slow
def test_the_local_executor_hands_the_store_to_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("PERDOLLAR_METADATA_URL", "off")
    store_url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    job = dataclasses.replace(_job(remote_store_url=store_url), duration_s=2)
    job = dataclasses.replace(job, run=job.run.replace("--duration 60", "--duration 2"))
    outcome = LocalExecutor().run(job)
    assert outcome.ok, outcome.reason + outcome.log_tail
    assert store_url not in outcome.log_tail
    with open_store(store_url) as store:
        assert [e.workload_name for e in store.list_history(kind="measurement")] == ["mlp"]
