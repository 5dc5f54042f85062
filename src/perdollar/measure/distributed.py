"""``--nproc N``: the workload under torch.distributed with DistributedDataParallel, or FSDP
with ``--plan`` (see ``fsdp.py``).

gloo on the CPU, NCCL on GPUs (one GPU per rank). Rank decisions (warm-up over, stop timing)
are agreed through a small gloo all-reduce at block edges so every rank runs the same number of
steps — otherwise DDP's gradient all-reduce would wait forever on a rank that stopped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from perdollar.measure.bench_records import BenchResult, BenchSpec
from perdollar.measure.loop import Coordinator
from perdollar.measure.result import Status

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

    from perdollar.workload.spec import Workload
    from perdollar.workload.step import StepRunner


class DistributedCoordinator(Coordinator):
    def __init__(self, group: ProcessGroup) -> None:
        self.group = group

    def agree_stop(self, local_stop: bool) -> bool:
        import torch
        import torch.distributed as dist

        flag = torch.tensor([1 if local_stop else 0], dtype=torch.int64)
        # Stop as soon as any rank wants to: a rank out of time must not be kept waiting.
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.group)
        return bool(flag.item())

    def share(self, value: int) -> int:
        import torch
        import torch.distributed as dist

        holder = torch.tensor([value], dtype=torch.int64)
        dist.broadcast(holder, src=0, group=self.group)
        return int(holder.item())


def wrap_data_parallel(runner: StepRunner, device: str) -> None:
    """Swap the runner's model for its DDP wrapper, so ``runner.run`` all-reduces gradients."""
    from torch.nn.parallel import DistributedDataParallel

    device_ids = [int(device.split(":")[1])] if device.startswith("cuda:") else None
    wrapped = DistributedDataParallel(runner.model, device_ids=device_ids)
    try:
        runner.model = wrapped
    except AttributeError:  # a frozen/slotted runner: set it the way its own __init__ would
        object.__setattr__(runner, "model", wrapped)


def _rank_main(
    rank: int, spec: BenchSpec, init_file: str, out_dir: str, given: Workload | None = None
) -> None:
    import torch
    import torch.distributed as dist

    from perdollar.lifeline import die_with_parent
    from perdollar.measure.fsdp import parse_bench_plan, plan_record, wrap_for_plan
    from perdollar.measure.modes import build_runner, prepare, resolve_device
    from perdollar.measure.worker import load_spec_workload, measure_prepared

    die_with_parent(spec.get("rank_parent_pid"))  # a rank outliving its worker would hold the GPU
    world = int(spec["nproc"])
    use_cuda = resolve_device(spec.get("device", "auto")).startswith("cuda")
    device = f"cuda:{rank}" if use_cuda else "cpu"
    if use_cuda:
        torch.cuda.set_device(rank)
    else:
        # The ranks share the host's cores; oversubscribing them would measure contention.
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        # A forked rank cannot restart OpenMP's threads (see worker.forked_main): one thread.
        torch.set_num_threads(1 if given is not None else max(1, cores // world))
    dist.init_process_group(
        "nccl" if use_cuda else "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world
    )
    try:
        control = dist.new_group(backend="gloo")
        workload = given if given is not None else load_spec_workload(spec)
        runner = None
        plan = parse_bench_plan(spec["plan"]) if spec.get("plan") else None
        if spec["mode"] != "data-only":
            runner = build_runner(workload, device)
            if plan is None:
                wrap_data_parallel(runner, device)
            else:
                wrap_for_plan(runner, device, plan)
        prepared = prepare(workload, spec["mode"], device, runner)
        # Every rank steps in lockstep, so rank 0's rate times the world size is the global rate.
        prepared = type(prepared)(prepared.step, prepared.sync, prepared.samples_per_step * world, runner)
        payload = measure_prepared(
            prepared, spec, device, coordinator=DistributedCoordinator(control), report=rank == 0
        )
        payload["backend"] = dist.get_backend()
        payload["world_size"] = world
        if plan is not None:
            payload = {**payload, **plan_record(plan, world, precision=workload.precision, device=device)}
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(payload), encoding="utf-8")
    except BaseException as error:
        # The rank's own account of its failure: the parent sees only torch's wrapped traceback.
        from perdollar.measure.worker import failure_payload

        failure: BenchResult = {**failure_payload(error), "rank": rank}
        Path(out_dir, f"rank{rank}-failure.json").write_text(json.dumps(failure), encoding="utf-8")
        raise
    finally:
        dist.destroy_process_group()


def run_ranks(spec: BenchSpec, workload: Workload | None = None) -> BenchResult:
    """Start ``spec['nproc']`` ranks, wait for them, and return rank 0's result.

    Ranks are spawned fresh and load the workload from its spec; an in-memory ``workload`` can
    only travel by forking.
    """
    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import ProcessException

    from perdollar.lifeline import scratch_folder

    world = int(spec["nproc"])
    spec = {**spec, "rank_parent_pid": os.getpid()}
    with scratch_folder("perdollar-ddp-") as scratch:
        init_file = str(Path(scratch, "rendezvous"))
        try:
            mp.start_processes(
                _rank_main,
                args=(spec, init_file, scratch, workload),
                nprocs=world,
                join=True,
                start_method="spawn" if workload is None else "fork",
            )
        except ProcessException as error:
            return _rank_failure(error, Path(scratch))
        # rank 0 wrote it with measure_prepared
        payload: BenchResult = json.loads(Path(scratch, "rank0.json").read_text(encoding="utf-8"))
    return payload


def _rank_failure(error: Exception, scratch: Path) -> BenchResult:
    """One line on the first rank that failed: its own report, else how it ended."""
    reports = sorted(scratch.glob("rank*-failure.json"))
    if reports:
        failure: BenchResult = json.loads(reports[0].read_text(encoding="utf-8"))
        failure["message"] = f"rank {failure['rank']}: {failure['message']}"
        return failure
    rank = getattr(error, "error_index", "?")
    signal_name = getattr(error, "signal_name", None)
    if signal_name:
        status: Status = "oom" if signal_name == "SIGKILL" else "killed"
        return {"status": status, "message": f"rank {rank} died of {signal_name}"}
    code = getattr(error, "exit_code", None)
    return {"status": "error", "message": f"rank {rank} exited with code {code}"}
