"""PyTorch matmul rates of this machine's GPU, in the schema of benchmarks/published_gemm_rates.csv.

    python3 benchmarks/gpu_gemm_rates.py OUT.csv [--sizes 1024,2048,4096,8192,10240]

For each square size and dtype (``fp32`` with TF32 off, PyTorch's default; ``tf32`` with it on;
``fp16``; ``bf16``) the product of two random matrices is warmed up, then timed with CUDA events
over enough back-to-back calls to last about 0.2 s, five times; the median rate is written. Also
prints the copy bandwidth of a 1 GiB tensor (GB/s, read + write). Needs only torch and a CUDA GPU;
`python3 benchmarks/gemm_rate_check.py OUT.csv` then sets the model against the rows.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
from pathlib import Path

import torch

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
REPEATS = 5


def seconds_per_call(fn, target_s: float = 0.2) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    calls = max(int(target_s / max(start.elapsed_time(end) / 1e3, 1e-6)), 1)
    samples = []
    for _ in range(REPEATS):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / calls)
    return statistics.median(samples)


def gpu_name() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
        )
        return out.stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        return torch.cuda.get_device_name()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--sizes", default="1024,2048,4096,8192,10240")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("error: no CUDA GPU is visible; run this on a machine with one")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    name = gpu_name()
    rows = []
    for dtype_name, dtype in DTYPES.items():
        torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
        for size in sizes:
            a = torch.randn(size, size, device="cuda", dtype=dtype)
            b = torch.randn(size, size, device="cuda", dtype=dtype)
            tflops = 2.0 * size**3 / seconds_per_call(lambda a=a, b=b: torch.matmul(a, b)) / 1e12
            print(f"{name}  {dtype_name:<5} {size:>6}  {tflops:8.1f} TFLOPS", flush=True)
            source = "measured: benchmarks/gpu_gemm_rates.py"
            rows.append([name, dtype_name, size, f"{tflops:.2f}", torch.__version__, source])
            del a, b
    torch.backends.cuda.matmul.allow_tf32 = False
    block = torch.empty(2**30 // 2, device="cuda", dtype=torch.float16)
    target = torch.empty_like(block)
    copy_s = seconds_per_call(lambda: target.copy_(block))
    print(f"{name}  copy of 1 GiB: {2 * 2**30 / copy_s / 1e9:,.0f} GB/s (read + write)")
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["accelerator", "dtype", "matrix_size", "tflops", "pytorch", "source"])
        writer.writerows(rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
