"""Build the bundled per-instance committed rates from the offline data folder.

    python -m perdollar.catalog.committed_build DATA_DIR

AWS publishes a reserved-instance rate per instance type, region and term; the data folder's
``aws_gpu_instances_by_region.csv`` (the instances.vantage.sh dump of 2025-11-30) carries the
Linux Standard no-upfront 1- and 3-year rates. They are written to ``committed_rates.csv.gz`` beside
this module, one row per (cloud, instance type, region, term), with their source and date.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
from pathlib import Path

import pandas as pd

from perdollar.catalog import provenance

RATES_FILE = Path(__file__).with_name("committed_rates.csv.gz")
RATE_COLUMNS = (
    "cloud",
    "instance_type",
    "region",
    "term_years",
    "payment",
    "price_per_hour",
    "source",
    "as_of",
)
# instances.vantage.sh dump (GitHub tsaol/aws-gpu data/gpu_instances_raw.json at that commit).
AWS_SOURCE = "ec2instances.info via tsaol/aws-gpu@2d0108c: reserved Standard no upfront, Linux"
_AWS_TERMS = {1: "linux_reserved_yrTerm1Standard.noUpfront", 3: "linux_reserved_yrTerm3Standard.noUpfront"}


def aws_rates(data_dir: Path) -> list[tuple[object, ...]]:
    """One row per AWS instance type, region and term with a published reserved rate."""
    frame = pd.read_csv(data_dir / "aws_gpu_instances_by_region.csv")
    rows: list[tuple[object, ...]] = []
    for years, column in _AWS_TERMS.items():
        priced = frame[frame[column] > 0]
        for name, region, price in zip(
            priced["instance_type"], priced["region"], priced[column], strict=True
        ):
            rows.append(("aws", name, region, years, "no-upfront", f"{float(price):g}", AWS_SOURCE,
                         provenance.AWS_GPU_PRICE_DATE))  # fmt: skip
    return sorted(rows, key=lambda r: (str(r[1]), str(r[2]), int(str(r[3]))))


def build(data_dir: Path, out: Path = RATES_FILE) -> Path:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(RATE_COLUMNS)
    writer.writerows(aws_rates(data_dir))
    out.write_bytes(
        gzip.compress(text.getvalue().encode(), mtime=0)
    )  # mtime 0: the same data, the same bytes
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="folder with aws_gpu_instances_by_region.csv")
    parser.add_argument("--out", type=Path, default=RATES_FILE, help="the rates CSV to write")
    args = parser.parse_args(argv)
    print(build(args.data_dir, args.out))


if __name__ == "__main__":
    main()
