"""Measurements made elsewhere, imported for calibration: published-schema CSV or bench JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

from perdollar.errors import PerdollarError
from perdollar.measure.result import HostFingerprint, Measurement, Rate
from perdollar.predict.published import normalise, read_published_csv
from perdollar.predict.references import WORKLOAD_PRECISION
from perdollar.workload import reference_for_published_model


def load_measurements_file(path: str | Path) -> list[Measurement]:
    """Read ``perdollar bench --json`` output (one object or a list) or a CSV in the published schema."""
    path = Path(path)
    if not path.exists():
        raise PerdollarError(f"no such file: {path}", "give the path of a bench JSON or published-schema CSV")
    if path.suffix.lower() == ".json":
        return _from_json(path)
    return _from_csv(path)


def _from_json(path: Path) -> list[Measurement]:
    from perdollar.measure.serialize import measurement_from_dict

    try:
        payload = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PerdollarError(
            f"{path} is not valid JSON ({exc})", "give the output of `perdollar bench --json`"
        ) from exc
    items = payload if isinstance(payload, list) else [payload]
    return [measurement_from_dict(item) for item in items if isinstance(item, dict)]


def _from_csv(path: Path) -> list[Measurement]:
    rows = normalise(read_published_csv(path), lambda name: None)
    out = []
    for _, row in rows.iterrows():
        rate = float(row["per_gpu_throughput"])
        batch = row["per_gpu_batch"]
        if not math.isfinite(rate) or rate <= 0:
            continue
        name = reference_for_published_model(str(row["model"])) or str(row["model"])
        precision = WORKLOAD_PRECISION.get(str(row["precision"]), str(row["precision"]))
        host = HostFingerprint(
            cpu_model="unknown",
            cpu_cores=0,
            memory_gib=0.0,
            accelerator=str(row["gpu"]),
            accelerator_key=None,
            accelerator_count=1,
            driver=None,
            instance_type="unknown",
            cloud=None,
            versions={"era": str(row["era"])},
        )
        out.append(
            Measurement(
                status="ok",
                mode="inference" if row["task"] != "train" else "cached-input",
                workload_name=name,
                workload_fingerprint="",
                host=host,
                started_at="",
                batch_size=int(batch) if isinstance(batch, float) and math.isfinite(batch) else 1,
                precision=precision,
                samples_per_second=Rate(rate, rate, rate),
                extra={
                    "source": str(row["source"]),
                    "published_model": str(row["model"]),
                    "unit": str(row["unit"]),
                },
            )
        )
    return out
