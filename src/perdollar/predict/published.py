"""Published measurements (one row per published figure, :data:`REQUIRED_COLUMNS`): normalised rows
and validation pairs. :data:`SAMPLE_CSV` ships a few dozen such rows (NVIDIA DeepLearningExamples'
ResNet-50 v1.5 tables on four GPUs, each row naming its source) to try ``perdollar validate`` on.

A pair is two rows of one source and one software era that measured the same model, task,
precision, per-GPU batch and sequence length on different GPUs. Lambda publishes system totals
and global batches: both are divided by ``gpu_count``. Latency rows become throughput
(batch / latency). Only single-GPU rows are paired: multi-GPU figures mix in each system's
interconnect, which the device model does not see. A row whose ``flag`` says the source's own
figure is implausible ("anomalous: …", "suspect: …") is neither anchor nor target; a flag that is
only a caveat ("A100 variant not stated") leaves the row in.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from perdollar.errors import PerdollarError
from perdollar.files import read_user_bytes

REQUIRED_COLUMNS = (
    "source",
    "model",
    "task",
    "gpu",
    "gpu_count",
    "precision",
    "batch_size",
    "batch_scope",
    "seq_len",
    "throughput",
    "unit",
    "metric",
    "throughput_scope",
    "notes",
)
SAMPLE_CSV = Path(__file__).parent / "data" / "published_sample.csv"
SCHEMA_FIX = (
    f"give a CSV with the columns {', '.join(REQUIRED_COLUMNS)}, as in the sample `perdollar validate` "
    "reads without a file"
)

# Pieces of a row's notes that change the software or the measurement method (the "era").
_ERA_PATTERNS = (
    r"PyTorch=(\d+\.\d+)",
    r"pytorch[:= ](\d+\.\d+)",
    r"container: ?([\w.\-]+)",
    r"(TF ?\d+\.\d+)",
    r"(XLA enabled)",
    r"(synthetic|real) data",
    r"variant: ?([^;]+)",
    r"Beam Size=(\d+)",
    r"(TP=\d+)",
    r"(torch\.compile)",
    r"(eager)",
    r"(v\d) era",
    r"(other results|main results)",
    r"(FP\d+ uses [^;]+)",
)
# Flags that doubt the published number itself, not just its context.
_DISTRUSTED_FLAG = re.compile(r"\b(anomal\w*|suspect\w*|implausib\w*|erroneous|wrong)\b", re.IGNORECASE)
# GPU names embedded in a source path (one file per GPU) are not part of the source's identity.
_GPU_DIR = re.compile(r"label/[^/]+/")


def era_of(notes: str) -> str:
    text = notes if isinstance(notes, str) else ""
    parts = []
    for pattern in _ERA_PATTERNS:
        match = re.search(pattern, text, flags=re.IGNORECASE)
        if match:
            parts.append(match.group(1).strip().lower())
    return "|".join(parts)


def _per_gpu_scale(scope: str) -> bool:
    scope = scope.lower() if isinstance(scope, str) else ""
    return "total" in scope or "whole system" in scope


# Twenty times the 3.4 MB of published measurements perdollar ships.
PUBLISHED_MAX_BYTES = 64 * 2**20


def read_published_csv(path: str | Path) -> pd.DataFrame:
    data = read_user_bytes(
        Path(path), "the CSV", PUBLISHED_MAX_BYTES, "give a CSV in the schema of published_dev.csv"
    )
    try:
        frame = pd.read_csv(io.BytesIO(data))
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise PerdollarError(f"{path} is not a readable CSV file ({exc})", SCHEMA_FIX) from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise PerdollarError(
            f"{path} lacks the column(s) {', '.join(missing)}",
            SCHEMA_FIX,
        )
    return frame


def normalise(frame: pd.DataFrame, accelerator_key: Callable[[str], str | None]) -> pd.DataFrame:
    """Per-GPU throughput and batch, the era and the pairing key of every row."""
    out = frame.copy()
    out["row_id"] = np.arange(len(out))
    count = pd.to_numeric(out["gpu_count"], errors="coerce").fillna(1).clip(lower=1)
    batch = pd.to_numeric(out["batch_size"], errors="coerce")
    is_global = out["batch_scope"].astype(str).str.startswith("global")
    out["per_gpu_batch"] = np.where(is_global, batch / count, batch)
    value = pd.to_numeric(out["throughput"], errors="coerce")
    is_latency = out["metric"].astype(str).str.lower().eq("latency")
    latency_rate = out["per_gpu_batch"].fillna(1.0) / (value / 1000.0)
    rate = np.where(is_latency, latency_rate, value)
    rate = np.where(out["throughput_scope"].map(_per_gpu_scale) & ~is_latency, rate / count, rate)
    out["per_gpu_throughput"] = rate
    out["era"] = out["notes"].map(era_of)
    notes = out["notes"].astype(str).str.lower()
    out["tf32_disabled"] = notes.str.contains("allow_tf32=false|tf32 off", regex=True)
    out["source_id"] = out["source"].astype(str).map(lambda s: _GPU_DIR.sub("label/*/", s))
    out["accelerator_key"] = out["gpu"].astype(str).map(accelerator_key)
    out["seq"] = [str(v) if isinstance(v, str) or pd.notna(v) else "" for v in out["seq_len"]]
    out["unit_kind"] = out["unit"].astype(str).str.replace(r"\s*\(.*\)", "", regex=True)
    key_cols = ["source_id", "era", "model", "task", "precision", "per_gpu_batch", "seq", "unit", "metric"]
    out["pair_key"] = ["¦".join(map(str, values)) for values in out[key_cols].itertuples(index=False)]
    flags = out["flag"] if "flag" in out else pd.Series("", index=out.index)
    out["distrusted"] = flags.map(lambda f: isinstance(f, str) and bool(_DISTRUSTED_FLAG.search(f)))
    out["usable"] = (
        (count == 1)
        & np.isfinite(out["per_gpu_throughput"])
        & (out["per_gpu_throughput"] > 0)
        & ~out["distrusted"]
    )
    return out


def form_pairs(rows: pd.DataFrame, target_gpus: set[str] | None = None) -> pd.DataFrame:
    """anchor → target pairs (different GPU names) among usable rows; one line per pair."""
    usable = rows[rows["usable"]]
    columns = ["pair_key", "row_id", "gpu", "accelerator_key", "per_gpu_throughput"]
    merged = usable[columns].merge(usable[columns], on="pair_key", suffixes=("_anchor", "_target"))
    merged = merged[merged["gpu_anchor"] != merged["gpu_target"]]
    if target_gpus is not None:
        merged = merged[merged["gpu_target"].isin(target_gpus)]
    return merged.reset_index(drop=True)
