"""Accelerator count and memory per VM as each cloud documents them, and machines no framework can
train on: the package's ``documented_accelerators.csv``, each row with its source.

The source data records some GPU slices as whole GPUs (Azure's NVv4 MI25 eighths as 16 GiB each);
these rows set the share (count 0.125, 2 GiB), which prediction then uses for memory and speed.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

DOCUMENTED_ACCELERATORS = Path(__file__).parent / "documented_accelerators.csv"


def with_documented_accelerators(instance_types: pd.DataFrame) -> pd.DataFrame:
    """Accelerator count and memory per VM from the cloud's own size tables, and exclusions."""
    documented = pd.read_csv(DOCUMENTED_ACCELERATORS, keep_default_na=False)
    frame = instance_types.copy()
    frame["excluded_reason"] = ""
    index = {(c, n): i for i, c, n in zip(frame.index, frame["cloud"], frame["name"], strict=True)}
    for row in documented.itertuples():
        at = index.get((row.cloud, row.instance_type))
        if at is None:
            continue  # a size the source data does not list
        frame.loc[at, "accelerator_count"] = float(row.accelerator_count)
        frame.loc[at, "accelerator_memory_gib_total"] = float(row.accelerator_memory_gib_total)
        frame.loc[at, "excluded_reason"] = row.excluded_reason
    return frame
