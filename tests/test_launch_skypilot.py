"""Dry-run task YAMLs are accepted by SkyPilot's own parser, with the right resources and caps.

SkyPilot validates instance types and regions against its catalog, which it downloads on first
use. Tests have no network, so each test points SkyPilot's runtime directory at a temporary
folder holding catalogs in SkyPilot's own format: GCP and Azure copied from the shared data
(they are SkyPilot-format files), AWS written from perdollar's catalog.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cli_runner import run_perdollar
from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.skypilot import task_config, write_task_yaml
from test_launch_jobs import make_estimate

# SkyPilot pins older click/uvicorn than perdollar's own environment uses, so CI installs it in
# a separate virtual environment (with this one's packages visible) and names its interpreter
# here; SkyPilot then runs only in the child processes these tests start.
SKY_PYTHON = os.environ.get("PERDOLLAR_TEST_SKYPILOT_PYTHON", sys.executable)
_HAS_SKY = subprocess.run([SKY_PYTHON, "-c", "import sky"], capture_output=True, check=False).returncode == 0
if not _HAS_SKY and not os.environ.get("CI"):  # CI installs it and must run these tests
    pytest.skip("SkyPilot is not installed (pip install 'perdollar[skypilot]')", allow_module_level=True)


AWS_COLUMNS = [
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "GpuInfo",
    "Price",
    "SpotPrice",
    "Region",
    "AvailabilityZone",
]


@pytest.fixture
def offline_sky(tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from perdollar import catalog

    runtime = tmp_path / "sky-runtime"
    folder = runtime / ".sky" / "catalogs" / "v8"
    for cloud in ("aws", "gcp", "azure"):
        (folder / cloud).mkdir(parents=True)
    shutil.copy(shared_data / "gcp_vms.csv", folder / "gcp" / "vms.csv")
    shutil.copy(shared_data / "azure_vms.csv", folder / "azure" / "vms.csv")
    frame = catalog.load().offers_frame()
    aws = frame[frame["cloud"] == "aws"]
    with (folder / "aws" / "vms.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(AWS_COLUMNS)
        for (name, region), rows in aws.groupby(["instance_type", "region"]):
            first = rows.iloc[0]
            on_demand = rows[rows["market"] == "on-demand"]["price_per_hour"]
            spot = rows[rows["market"] == "spot"]["price_per_hour"]
            writer.writerow(
                [
                    name,
                    first["accelerator_name"] or "",
                    first["accelerator_count"] or "",
                    first["vcpus"],
                    first["memory_gib"],
                    "",
                    on_demand.min() if len(on_demand) else "",
                    spot.min() if len(spot) else "",
                    region,
                    f"{region}a",
                ]
            )
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("HOME", str(runtime))
    return runtime


_CHILD = """
import json, sys, sky
out = []
for path in sys.argv[1:]:
    try:
        task = sky.Task.from_yaml(path)
        (r,) = list(task.resources)
        out.append({'name': task.name, 'num_nodes': task.num_nodes, 'cloud': str(r.cloud),
                    'region': r.region, 'instance_type': r.instance_type, 'use_spot': r.use_spot,
                    'accelerators': r.accelerators, 'envs': dict(task.envs), 'run': task.run,
                    'hourly_cost': r.get_cost(3600),
                    'network_tier': r.network_tier.value if r.network_tier else None})
    except Exception as error:
        out.append({'error': f'{type(error).__name__}: {error}'})
from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.skypilot import build_task
from test_launch_jobs import make_estimate
job = job_for_estimate(make_estimate('g5.xlarge', 120, 0.42, market='spot'), 0, JobOptions(workload='mlp'),
                       accelerator_name='A10G')
task = build_task(job)
(r,) = list(task.resources)
api = {'spot': r.use_spot, 'type': r.instance_type, 'acc': r.accelerators, 'region': r.region,
       'nodes': task.num_nodes, 'setup': task.setup, 'cost': r.get_cost(3600)}
print(json.dumps({'parsed': out, 'api': api}))
"""


def _skypilot_reads(paths: list[Path], runtime: Path) -> dict:
    """Parse each YAML with ``sky.Task.from_yaml`` and price it, and build one task through the
    Python API, in a fresh interpreter (SkyPilot reads its catalog location once, at import).
    The parser checks the schema; pricing checks instance type, region and market against the
    catalog."""
    env = {
        **os.environ,
        "SKY_RUNTIME_DIR": str(runtime),
        "HOME": str(runtime),
        "PYTHONPATH": str(Path(__file__).resolve().parent),
    }
    done = subprocess.run(
        [SKY_PYTHON, "-c", _CHILD, *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_task_yamls_parse_with_skypilot(offline_sky: Path, tmp_path: Path) -> None:
    options = JobOptions(workload="vit-b16", duration_s=60)
    jobs = [
        job_for_estimate(
            make_estimate("g5.xlarge", 120, 0.42, market="spot"), 0, options, accelerator_name="A10G"
        ),
        job_for_estimate(
            make_estimate("g5.12xlarge", 400, 5.672, nodes=2, accelerators=4),
            1,
            options,
            accelerator_name="A10G",
        ),
        job_for_estimate(
            make_estimate("a2-highgpu-1g", 300, 3.67, cloud="gcp", region="us-central1"),
            2,
            options,
            accelerator_name="A100",
        ),
        # Proves the check is real: there is no g5.nosuch in any catalog.
        job_for_estimate(make_estimate("g5.nosuch", 120, 1.0), 3, options, accelerator_name="A10G"),
    ]
    paths = [write_task_yaml(job, tmp_path / "yaml") for job in jobs]
    result = _skypilot_reads(paths, offline_sky)
    spot, multi, gcp, unknown = result["parsed"]
    assert (
        spot["use_spot"] is True
        and spot["instance_type"] == "g5.xlarge"
        and spot["accelerators"] == {"A10G": 1}
    )
    assert spot["region"] == "us-east-1" and spot["cloud"] == "AWS"
    assert multi["num_nodes"] == 2 and multi["accelerators"] == {"A10G": 4} and multi["use_spot"] is False
    assert "--nproc 4" in multi["run"] and multi["network_tier"] == "best"
    assert gcp["cloud"] == "GCP" and gcp["instance_type"] == "a2-highgpu-1g"
    assert "g5.nosuch" in unknown["error"]
    for job, task in zip(jobs[:3], result["parsed"][:3], strict=True):
        assert float(task["envs"]["PERDOLLAR_MAX_DOLLARS"]) == pytest.approx(job.caps.max_dollars, abs=1e-3)
        assert task["envs"]["PERDOLLAR_MAX_SECONDS"] == str(int(job.caps.max_seconds))
        assert task["hourly_cost"] > 0
    assert any("cost cap $" in line for line in paths[0].read_text().splitlines()[:4])
    # The Python API builds the same task as the YAML describes.
    api_job = job_for_estimate(
        make_estimate("g5.xlarge", 120, 0.42, market="spot"),
        0,
        JobOptions(workload="mlp"),
        accelerator_name="A10G",
    )
    api = result["api"]
    assert (api["spot"], api["type"], api["acc"], api["region"], api["nodes"]) == (
        True,
        "g5.xlarge",
        {"A10G": 1},
        "us-east-1",
        1,
    )
    assert api["setup"] == task_config(api_job)["setup"] and api["cost"] > 0


def test_sweep_dry_run_writes_parseable_yamls(offline_sky: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan"
    done = run_perdollar(
        "sweep",
        "vit-b16",
        "--via",
        "skypilot",
        "--top",
        "3",
        "--dry-run",
        "--out",
        str(out),
        "--json",
        env={"SKY_RUNTIME_DIR": str(offline_sky)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plan = json.loads(done.stdout)
    assert plan["dry_run"] is True and len(plan["jobs"]) == 3
    paths = sorted(out.glob("*.yaml"))
    assert len(paths) == 3
    parsed = _skypilot_reads(paths, offline_sky)["parsed"]
    by_name = {task.get("name"): task for task in parsed}
    for row in plan["jobs"]:
        task = by_name[row["job"]]
        resources = row["resources"]
        assert task["cloud"].lower() == resources["cloud"] and task["region"] == resources["region"]
        assert task["use_spot"] is resources["use_spot"]
        assert float(task["envs"]["PERDOLLAR_MAX_DOLLARS"]) == pytest.approx(row["cost_cap_usd"], abs=1e-3)
        assert "vit-b16" in task["run"] and task["hourly_cost"] > 0
        config = yaml.safe_load(Path(row["yaml"]).read_text())
        assert config["resources"]["autostop"]["down"] is True
        # SkyPilot's current location key; the deprecated cloud:/region: keys are gone.
        assert config["resources"]["infra"] == f"{resources['cloud']}/{resources['region']}"
        assert not {"cloud", "region"} & set(config["resources"])


def test_an_exported_training_plan_parses_as_a_multi_node_skypilot_task(
    offline_sky: Path, tmp_path: Path
) -> None:
    task_file = tmp_path / "train.yaml"
    done = run_perdollar("export", "2x p5.48xlarge spot @us-east-1", "--format", "skypilot",
                         "--workload", "llama-3.1-70b", "--out", str(task_file), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    description = json.loads(done.stdout)
    (parsed,) = _skypilot_reads([task_file], offline_sky)["parsed"]
    assert parsed["num_nodes"] == 2 and parsed["instance_type"] == "p5.48xlarge"
    assert parsed["use_spot"] is True
    assert parsed["region"] == "us-east-1" and parsed["network_tier"] == "best"
    assert parsed["envs"]["PERDOLLAR_PLAN"] == description["plan"]["token"]
    assert parsed["envs"]["PERDOLLAR_TENSOR_PARALLEL"] == str(description["plan"]["tensor_parallel"])
    assert 'torchrun --nproc-per-node=8 --nnodes="$SKYPILOT_NUM_NODES"' in parsed["run"]
