"""Benchmark jobs on SkyPilot: task YAML, ``sky.Task`` objects, launch, logs and tear-down.

SkyPilot is an optional dependency (``pip install 'perdollar[skypilot]'``); it is imported only
when a job is really launched or a task object is built, never to write a YAML file.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import yaml

from perdollar.errors import PerdollarError
from perdollar.files import write_file_safely
from perdollar.jsonable import JsonObject
from perdollar.launch.outcome import JobOutcome, OutcomeStatus, outcome_from_log
from perdollar.launch.spec import STORE_SECRET, BenchmarkJob


def import_sky() -> ModuleType:
    try:
        import sky
    except ImportError as error:
        raise PerdollarError(
            "SkyPilot is not installed, so `--via skypilot` cannot launch anything",
            # No square brackets: the CLI prints errors as rich markup.
            "install SkyPilot (pip install skypilot, the 'skypilot' extra of perdollar) "
            "or use --dry-run / --via local",
        ) from error
    return sky


def _accelerators(job: BenchmarkJob) -> JsonObject | None:
    resources = job.resources
    if not resources.accelerator:
        return None
    count = resources.accelerator_count
    return {resources.accelerator: int(count) if float(count).is_integer() else count}


def resources_config(job: BenchmarkJob) -> JsonObject:
    resources = job.resources
    # SkyPilot's one location key (cloud/region/zone) since `cloud:` and `region:` were deprecated.
    where = (resources.cloud, resources.region, resources.zone)
    config: JsonObject = {"infra": "/".join(part for part in where if part)}
    # GCP TPU VMs are asked for by accelerator alone; everything else by its exact shape.
    if not (resources.accelerator or "").startswith("tpu-"):
        config["instance_type"] = resources.instance_type
    accelerators = _accelerators(job)
    if accelerators:
        config["accelerators"] = accelerators
    if resources.num_nodes > 1 and resources.cloud in ("aws", "gcp"):
        # Nodes of one cluster already share a zone; the best tier adds EFA / GPUDirect where the
        # instance has it, so the all-reduce is not held back by the ordinary network.
        config["network_tier"] = "best"
    config["use_spot"] = resources.use_spot
    if resources.use_spot:
        # Managed-job recovery: relaunch elsewhere on preemption, but never retry a failing benchmark.
        config["job_recovery"] = {"strategy": "FAILOVER", "max_restarts_on_errors": 0}
    # The cluster tears itself down a minute after the benchmark, even if perdollar is gone.
    config["autostop"] = {"idle_minutes": job.caps.autostop_minutes, "down": True}
    return config


def task_config(job: BenchmarkJob) -> JsonObject:
    """The SkyPilot task YAML of a job, as a dict (the schema of ``sky.Task.from_yaml``)."""
    config: JsonObject = {
        "name": job.name,
        "resources": resources_config(job),
        "num_nodes": job.resources.num_nodes,
        "envs": {
            **{k: str(v) for k, v in job.envs.items()},
            "PERDOLLAR_MAX_SECONDS": str(int(job.caps.max_seconds)),
            "PERDOLLAR_MAX_DOLLARS": f"{job.caps.max_dollars:.4f}",
        },
        "setup": job.setup,
        "run": job.run,
    }
    if job.store_url:
        # Named, not given: its value comes from the launching shell (`--secret`), so the
        # store's password is never written into the file.
        config["secrets"] = {STORE_SECRET: None}
    if job.workdir:
        config["workdir"] = job.workdir
    if job.file_mounts:
        config["file_mounts"] = dict(job.file_mounts)
    return config


class _ScriptDumper(yaml.SafeDumper):
    """Writes multi-line scripts as literal blocks, so a task file reads like the shell it runs."""


def _literal_scripts(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_ScriptDumper.add_representer(str, _literal_scripts)


def _comment(text: str) -> str:
    """A value as it may appear in a comment line: one line, whatever it holds (a newline in a
    file name would otherwise end the comment and start YAML of its own)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def task_yaml(job: BenchmarkJob) -> str:
    launch = "jobs launch" if job.resources.use_spot else "launch --down"
    secret = f"--secret {STORE_SECRET} " if job.store_url else ""
    lines = [
        f"perdollar benchmark job for {_comment(job.candidate)}",
        f"workload {_comment(job.workload)}; measures {job.duration_s:.0f} s ({_comment(job.mode)}), "
        f"killed after {job.caps.max_seconds:.0f} s",
        f"cost cap ${job.caps.max_dollars:.3g}: ${job.caps.price_per_hour:.4g}/h x "
        f"({job.caps.overhead_seconds:.0f} s provisioning + {job.caps.max_seconds:.0f} s run)",
        f"launch: sky {launch} {secret}<this file>",
    ]
    if job.store_url:
        lines.append(f"with {STORE_SECRET} set to the shared store's URL in the launching shell")
    return dump_task(task_config(job), lines)


def dump_task(config: JsonObject, comments: Sequence[str]) -> str:
    """A task file: comment lines, then the config with scripts as literal blocks."""
    one_line = (" ".join(line.splitlines()) for line in comments)  # each comment stays a comment
    text = "".join(f"# {line}\n" for line in one_line) + yaml.dump(
        config, Dumper=_ScriptDumper, sort_keys=False, width=110
    )
    if yaml.safe_load(text) != config:  # the file must hold exactly the data, nothing a value added
        raise PerdollarError(
            f"the task file of {config.get('name')} does not read back as written",
            "rename the workload file to one without control characters",
        )
    return text


def write_task_yaml(job: BenchmarkJob, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{job.name}.yaml"
    write_file_safely(path, task_yaml(job), overwrite=True)  # never through a link planted there
    return path


def build_task(job: BenchmarkJob, sky: ModuleType | None = None) -> object:
    """A ``sky.Task`` with its ``sky.Resources``, built through SkyPilot's Python API."""
    sky = sky or import_sky()
    config = resources_config(job)
    resources = sky.Resources(
        infra=config["infra"],
        instance_type=config.get("instance_type"),
        accelerators=config.get("accelerators"),
        use_spot=config["use_spot"],
        job_recovery=config.get("job_recovery"),
        autostop=config["autostop"],
        network_tier=config.get("network_tier"),
    )
    full = task_config(job)
    return sky.Task(
        name=job.name,
        setup=job.setup,
        run=job.run,
        envs=full["envs"],
        secrets={STORE_SECRET: job.store_url} if job.store_url else None,
        workdir=job.workdir,
        file_mounts=dict(job.file_mounts) or None,
        num_nodes=job.resources.num_nodes,
        resources=resources,
    )


class _LineSink(io.StringIO):
    """Collects a streamed log and hands each complete line to a callback."""

    def __init__(self, on_line: Callable[[str], None] | None) -> None:
        super().__init__()
        self._on_line = on_line
        self._partial = ""

    def write(self, text: str) -> int:
        if self._on_line is not None:
            self._partial += text
            *complete, self._partial = self._partial.split("\n")
            for line in complete:
                self._on_line(line)
        return super().write(text)


_PROVISION_ERRORS = (
    "ResourcesUnavailableError",
    "ResourcesMismatchError",
    "InvalidCloudCredentials",
    "NoCloudAccessError",
    "ProvisionPrechecksError",
    "QuotaExceeded",
)


class SkyPilotExecutor:
    """Launch → stream logs → fetch the framed result → tear down.

    On-demand candidates run as a cluster launched with ``down=True``; spot candidates run as
    managed jobs, which SkyPilot recovers after a preemption and tears down itself.
    """

    name = "skypilot"
    billed = True

    def __init__(self, log_dir: Path | None = None) -> None:
        self.sky = import_sky()
        self.log_dir = log_dir

    def run(self, job: BenchmarkJob, on_line: Callable[[str], None] | None = None) -> JobOutcome:
        sky = self.sky
        sink = _LineSink(on_line)
        started = time.monotonic()
        task = build_task(job, sky)
        returncode: int | None = 0
        try:
            if job.resources.use_spot:
                job_ids, _ = sky.stream_and_get(sky.jobs.launch(task, name=job.name))
                job_id = job_ids[0] if isinstance(job_ids, list | tuple) else job_ids
                returncode = sky.jobs.tail_logs(job_id=job_id, follow=True, output_stream=sink)
            else:
                job_id, _ = sky.stream_and_get(
                    sky.launch(
                        task,
                        cluster_name=job.name,
                        down=True,
                        idle_minutes_to_autostop=job.caps.autostop_minutes,
                    )
                )
                returncode = sky.tail_logs(job.name, job_id, follow=True, output_stream=sink)
        except Exception as error:  # every failure of one candidate is a result, never the sweep's end
            kind = type(error).__name__
            status: OutcomeStatus = "failed-to-provision" if kind in _PROVISION_ERRORS else "crashed"
            first_line = str(error).splitlines()[0] if str(error) else ""
            return JobOutcome(
                job,
                self.name,
                status,
                f"{kind}: {first_line}",
                None,
                time.monotonic() - started,
                sink.getvalue()[-2000:],
            )
        finally:
            if not job.resources.use_spot:
                self._tear_down(job.name)
        log_path = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            path = self.log_dir / f"{job.name}.log"
            write_file_safely(path, sink.getvalue(), overwrite=True)
            log_path = str(path)
        return outcome_from_log(
            job,
            self.name,
            sink.getvalue(),
            returncode=returncode if isinstance(returncode, int) else None,
            wall_seconds=time.monotonic() - started,
            log_path=log_path,
        )

    def _tear_down(self, cluster_name: str) -> None:
        try:
            self.sky.stream_and_get(self.sky.down(cluster_name))
        except Exception:  # already gone (autostop) or never created: nothing left to pay for
            return
