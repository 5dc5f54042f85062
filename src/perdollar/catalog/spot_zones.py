"""A region's spot price from its zones' prices, as the raw data keeps them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

# The AWS GPU spot prices were read per zone; the unified table keeps the lowest and highest, and
# the per-region file their mean (``linux_spot_avg``). The mean over zones is the typical price.
AWS_ZONE_MIN_BASIS = "aws_describe_spot_price_history_min_over_azs"
AWS_ZONE_MEAN_BASIS = "aws_describe_spot_price_history_mean_over_azs"


def aws_zone_means(data_dir: Path) -> dict[tuple[str, str], float]:
    """(instance type, region) → the mean of the zones' spot prices, where the source read zones."""
    path = data_dir / "aws_gpu_instances_by_region.csv"
    if not path.exists():
        return {}
    frame = pd.read_csv(path, usecols=["instance_type", "region", "linux_spot_min", "linux_spot_avg"])
    read = frame[frame["linux_spot_min"].notna() & frame["linux_spot_avg"].notna()]
    return {
        (str(name), str(region)): float(mean)
        for name, region, mean in zip(
            read["instance_type"], read["region"], read["linux_spot_avg"], strict=True
        )
    }


def spot_prices(row: dict[str, object], zone_means: dict[tuple[str, str], float]) -> tuple[float, float, str]:
    """(typical price, lowest zone price, basis) of a row's spot offer."""
    lowest = float(row["price_spot_usd_per_hr"])  # type: ignore[arg-type]
    basis = str(row["spot_price_basis"] or "") if isinstance(row["spot_price_basis"], str) else ""
    mean = zone_means.get((str(row["name"]), str(row["region"])))
    if row["cloud"] == "aws" and basis == AWS_ZONE_MIN_BASIS and mean is not None and mean >= lowest:
        return mean, lowest, AWS_ZONE_MEAN_BASIS
    return lowest, lowest, basis  # one price for every zone (GCP's SKUs, Azure's meters, estimates)
