"""How far spot prices moved between two readings in the data snapshot: the drift band's width.

    python benchmarks/spot_price_drift.py DATA_DIR   # the raw data folder the catalog is built from

The AWS Spot Advisor's savings (the trailing month to 2025-06-28) give each GPU type and region a
spot price (on-demand × (1 − savings)); the same types' zone-mean spot prices were read on
2025-11-30. The quantiles of |log(later / earlier)| over the pairs, and their span in days, are what
``perdollar.price.spot_prices`` widens an old spot price's band by.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ADVISOR_MIDPOINT = dt.date(2025, 6, 13)  # the middle of the month the advisor describes
SPOT_READ_ON = dt.date(2025, 11, 30)


def main(data_dir: Path) -> None:
    spot = pd.read_csv(data_dir / "aws_gpu_instances_by_region.csv")
    advisor = pd.read_csv(data_dir / "aws_spot_advisor_linux.csv")
    pairs = spot.merge(advisor, on=["region", "instance_type"])
    pairs = pairs[pairs["linux_spot_avg"].notna() & (pairs["linux_ondemand"] > 0)]
    earlier = pairs["linux_ondemand"] * (100 - pairs["s"]) / 100
    change = np.log(pairs["linux_spot_avg"] / earlier)
    days = (SPOT_READ_ON - ADVISOR_MIDPOINT).days
    print(f"{len(pairs)} GPU types × regions read both times, {days} days apart")
    print(f"median log change {change.median():+.3f} (no trend if near 0)")
    for q in (0.5, 0.8, 0.9):
        bound = change.abs().quantile(q)
        print(f"{q:.0%} moved by at most |log| {bound:.3f} (×{np.exp(bound):.2f})")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/spot_price_drift.py DATA_DIR")
    main(Path(sys.argv[1]))
