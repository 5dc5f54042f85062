"""Measurements made elsewhere, imported for calibration: published-schema CSV or bench JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

from perdollar.errors import PerdollarError
from perdollar.files import read_user_bytes
from perdollar.measure.result import HostFingerprint, Measurement, Rate
from perdollar.predict.published import PUBLISHED_MAX_BYTES, normalise, read_published_csv
from perdollar.predict.references import WORKLOAD_PRECISION
from perdollar.workload import reference_for_published_model

_JSON_FIX = "give the output of `perdollar bench --json`"


def load_measurements_file(path: str | Path) -> list[Measurement]:
    """Read ``perdollar bench --json`` output (one object or a list) or a CSV in the published schema."""
    path = Path(path)
    if not path.exists():
        raise PerdollarError(f"no such file: {path}", "give the path of a bench JSON or published-schema CSV")
    is_json = path.suffix.lower() == ".json"
    found = _from_json(path) if is_json else _from_csv(path)
    if not found:
        why = "an empty list" if is_json else "no row has a positive, finite throughput on one GPU"
        raise PerdollarError(
            f"{path} holds no usable measurement ({why})",
            "give rows in the columns of `perdollar validate`'s sample, or `perdollar bench --json` output",
        )
    return found


def _from_json(path: Path) -> list[Measurement]:
    from perdollar.measure.serialize import measurement_from_dict

    data = read_user_bytes(path, "the measurements file", PUBLISHED_MAX_BYTES, _JSON_FIX)
    try:
        payload = json.loads(data)
    except RecursionError:
        raise PerdollarError(f"{path} nests its JSON too deeply to be measurements", _JSON_FIX) from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise PerdollarError(f"{path} is not valid JSON ({exc})", _JSON_FIX) from None
    items = payload if isinstance(payload, list) else [payload]
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            where = f"item {index + 1} of {path}" if isinstance(payload, list) else str(path)
            raise PerdollarError(
                f"{where} is JSON {_json_kind(item)}, not a measurement",
                "give the output of `perdollar bench --json` (an object, or a list of objects)",
            )
    return [measurement_from_dict(item) for item in items]


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    names = {bool: "true/false", int: "number", float: "number", str: "text", list: "list"}
    return names.get(type(value), type(value).__name__)


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
