"""Readers of the shared data folder's accelerator table and GPU name aliases.

Used only by the fit and the accuracy benchmark, which take that folder as an argument; the
package itself gets accelerators from the catalog at run time.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from perdollar.catalog.model import Accelerator
from perdollar.catalog.spec_fills import with_spec_fills
from perdollar.catalog.stacks import software_stack_for


def read_accelerator_specs(data_dir: Path) -> dict[str, Accelerator]:
    specs = with_spec_fills(pd.read_csv(data_dir / "accelerator_specs.csv"))

    def num(value: object) -> float | None:
        try:
            f = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return f if math.isfinite(f) else None

    out = {}
    for _, r in specs.iterrows():
        sm = num(r.get("sm_count"))
        out[r["accelerator_key"]] = Accelerator(
            key=r["accelerator_key"],
            vendor=str(r["vendor"]),
            family=str(r["family"]),
            architecture=str(r["architecture"]),
            memory_gib=num(r["memory_gb"]) or 0.0,
            memory_bandwidth_gbps=num(r["memory_bandwidth_gbps"]) or 0.0,
            peak_fp32_tflops=num(r["peak_fp32_tflops"]),
            peak_tf32_tflops=num(r["peak_tf32_tflops_dense"]),
            peak_fp16_tflops=num(r["peak_fp16_tflops_dense"]),
            peak_bf16_tflops=num(r["peak_bf16_tflops_dense"]),
            peak_fp8_tflops=num(r["peak_fp8_tflops_dense"]),
            peak_int8_tops=num(r["peak_int8_tops_dense"]),
            interconnect=str(r["interconnect"]),
            interconnect_bandwidth_gbps=num(r["interconnect_bandwidth_gbps"]),
            software_stack=software_stack_for(str(r["vendor"]), str(r["family"])),
            compute_capability=f"{cc:.1f}" if (cc := num(r.get("compute_capability"))) else None,
            sm_count=int(sm) if sm else None,
            boost_clock_mhz=num(r.get("boost_clock_mhz")),
            tdp_w=num(r.get("tdp_w")),
            memory_type=str(r["memory_type"]) if isinstance(r.get("memory_type"), str) else None,
        )
    return out


def read_aliases(data_dir: Path) -> dict[str, str]:
    aliases = pd.read_csv(data_dir / "gpu_name_aliases.csv")
    return dict(zip(aliases["measurement_gpu_name"], aliases["accelerator_key"], strict=True))
