"""A remote node installs perdollar from the wheel the sweep built from this checkout, never the index.

The task's own setup script runs in a fresh virtual environment (seeing this interpreter's
packages, so nothing else is downloaded) with the package index switched off; then the task's
own run script benchmarks a tiny workload with the perdollar it installed.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cli_runner import run_perdollar
from perdollar.launch.spec import RESULT_BEGIN, RESULT_END


def see_this_interpreters_packages(venv: Path) -> None:
    """Let `venv` import what this interpreter has installed, wherever that is.

    `--system-site-packages` reaches only the base interpreter's packages: when the tests run
    inside a virtual environment (as most users install), its packages would be invisible and the
    offline install could not find perdollar's dependencies. A path file lists them; as plain paths
    (not `site.addsitedir`) their own path files are not run, so an editable perdollar of this
    interpreter is not importable there and the wheel must be what `import perdollar` finds.
    """
    (site_packages,) = venv.glob("lib/python*/site-packages")
    (site_packages / "this-interpreter.pth").write_text("\n".join(site.getsitepackages()) + "\n")


@pytest.mark.slow
def test_a_dry_run_task_installs_perdollar_from_the_checkout_and_benchmarks(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    planned = run_perdollar("sweep", "mlp", "--via", "skypilot", "--top", "1", "--duration", "4", "--dry-run",
                            "--out", str(out), "--json", "--no-store", timeout=600)  # fmt: skip
    assert planned.returncode == 0, planned.stderr[-3000:]
    (task_file,) = out.glob("*.yaml")
    task = yaml.safe_load(task_file.read_text())
    resources = task["resources"]
    assert "infra" in resources and not {"cloud", "region", "zone"} & set(resources)
    assert "pip install perdollar" not in task["setup"] and "perdollar[" not in task["setup"]
    ((remote, local),) = task["file_mounts"].items()
    assert remote.startswith("~/.perdollar/wheels/perdollar-") and Path(local).is_file()

    home = tmp_path / "node-home"
    (home / ".perdollar" / "wheels").mkdir(parents=True)
    shutil.copy(local, home / remote.removeprefix("~/"))  # what SkyPilot's file mount does
    venv = tmp_path / "node-env"
    # The node's setup and run scripts are the subject: a fresh environment, its pip, its own perdollar.
    # Without a pip of its own, the environment uses this interpreter's pip and setuptools.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True)  # fmt: skip
    see_this_interpreters_packages(venv)
    path = f"{venv / 'bin'}:{os.environ['PATH']}"
    env = {**os.environ, "HOME": str(home), "PATH": path, "PIP_NO_INDEX": "1"}
    env.pop("PERDOLLAR_SKIP_INSTALL", None)
    env.pop("PYTHONPATH", None)
    setup = subprocess.run(
        ["bash", "-c", task["setup"]], capture_output=True, text=True, env=env, timeout=600
    )
    assert setup.returncode == 0, setup.stderr[-3000:]
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import perdollar; print(perdollar.__file__)"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(venv)

    run = subprocess.run(["bash", "-c", task["run"]], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    framed = run.stdout.split(RESULT_BEGIN, 1)[1].split(RESULT_END, 1)[0]
    document = json.loads(framed)
    measurement = document["measurements"][0] if "measurements" in document else document
    assert measurement["status"] == "ok" and measurement["samples_per_second"]["median"] > 0
