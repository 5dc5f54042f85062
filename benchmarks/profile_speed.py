"""How long profiling takes: `perdollar profile` traces one step on fake tensors, no compute.

Prints, for each workload, the time to import its model code, the first profile in a fresh
process (what `perdollar profile NAME` pays after start-up) and a second profile at another
batch size (no cache hit), as wall-clock and as CPU seconds of the process. Tracing is
single-threaded Python, so on a shared, busy machine the CPU seconds are what an idle one
would take. Run: python benchmarks/profile_speed.py [names...]
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import torch

CHILD = """
import importlib, sys, time
start = time.perf_counter()
from perdollar.profile import profile_workload
from perdollar.workload import load_workload
module = {module!r}
if module:
    importlib.import_module(module)
imported = time.perf_counter()
workload = load_workload({name!r})
cpu = time.process_time()
profile = profile_workload(workload)
first, first_cpu = time.perf_counter(), time.process_time()
profile_workload(load_workload({name!r}, batch_size=workload.batch_size + 1))
second, second_cpu = time.perf_counter(), time.process_time()
print(f"{{imported - start:.2f}} {{first - imported:.2f}} {{first_cpu - cpu:.2f}} {{second - first:.2f}} "
      f"{{second_cpu - first_cpu:.2f}} {{len(profile.operators)}} {{workload.batch_size}}")
"""

MODEL_MODULES = {
    "vit-b16": "transformers.models.vit.modeling_vit",
    "bert-base": "transformers.models.bert.modeling_bert",
    "gpt2": "transformers.models.gpt2.modeling_gpt2",
    "llama-8b": "transformers.models.llama.modeling_llama",
}


def main(names: list[str]) -> None:
    print(
        f"host: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores, "
        f"torch {torch.__version__}, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'workload':<12} {'batch':>6} {'import s':>9} {'profile s':>10} {'(cpu s)':>8} {'again s':>8} "
        f"{'(cpu s)':>8} {'op records':>11}"
    )
    for name in names:
        code = CHILD.format(name=name, module=MODEL_MODULES.get(name, ""))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{name:<12} failed: {done.stderr.strip().splitlines()[-1]}")
            continue
        imported, first, first_cpu, second, second_cpu, records, batch = done.stdout.split()
        print(
            f"{name:<12} {batch:>6} {imported:>9} {first:>10} {first_cpu:>8} {second:>8} {second_cpu:>8} "
            f"{records:>11}"
        )


if __name__ == "__main__":
    main(sys.argv[1:] or ["vit-b16", "resnet50", "bert-base", "gpt2", "mlp"])
