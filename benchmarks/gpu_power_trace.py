"""Record the board's power through NVML while a GPU idles, decodes and prefills.

    python3 benchmarks/gpu_power_trace.py OUT_DIR      # on an NVIDIA GPU (~15 s)

A thread samples ``nvmlDeviceGetPowerUsage`` (mW) and the driver's energy counter
(``nvmlDeviceGetTotalEnergyConsumption``, mJ) every 20 ms while the main thread runs, in turn,
nothing (1 s), graph-captured decode steps of Llama-3.1-8B at batch 64 over 2,048 tokens (2 s) and
eager prefills of 4 x 2,048 tokens (2 s). Written: ``power_trace.csv`` (t_s, board0_mw,
energy_counter_mj, phase): a recorded trace that replays what ``bench`` reads, with the counter
beside it to check an integral of the samples against.
"""

from __future__ import annotations

import argparse
import csv
import sys
import threading
import time
from pathlib import Path

import pynvml
import torch

from gpu_graph_steps import LLAMA_31_8B, Decoder, decode_call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    device = torch.device("cuda")
    with torch.no_grad():
        model = Decoder(LLAMA_31_8B, device)
        decode, _, _ = decode_call(model, 64, 2048, device)
        prompt = torch.randint(0, LLAMA_31_8B.vocab, (4, 2048), device=device)
        decode()
        model.forward(prompt, 4, 2048, None)
        torch.cuda.synchronize()
    samples: list[tuple[float, int, int, str]] = []
    phase = ["idle"]
    stop = threading.Event()
    start = time.perf_counter()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter() - start, pynvml.nvmlDeviceGetPowerUsage(handle),
                            pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), phase[0]))  # fmt: skip
            time.sleep(0.02)

    thread = threading.Thread(target=sample)
    thread.start()
    time.sleep(1.0)
    with torch.no_grad():

        def prefill() -> None:
            model.forward(prompt, 4, 2048, None)

        for name, call, seconds in (("decode", decode, 2.0), ("prefill", prefill, 2.0)):
            phase[0] = name
            until = time.perf_counter() + seconds
            while time.perf_counter() < until:
                call()
                torch.cuda.synchronize()
    phase[0] = "idle"
    time.sleep(0.5)
    stop.set()
    thread.join()
    with (args.out / "power_trace.csv").open("w", newline="") as handle_out:
        writer = csv.writer(handle_out)
        writer.writerow(["t_s", "board0_mw", "energy_counter_mj", "phase"])
        first = samples[0][2]
        for t, milliwatts, counter, name in samples:
            writer.writerow([f"{t:.3f}", milliwatts, counter - first, name])
    print(f"{len(samples)} samples over {samples[-1][0]:.1f} s; {torch.cuda.get_device_name(0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
