"""Build the bundled catalog snapshot from the offline data folder.

    python -m perdollar.catalog.build DATA_DIR [--out DIR]

``DATA_DIR`` holds ``instances_unified.csv``, ``accelerator_specs.csv``, ``gpu_name_aliases.csv``
and ``aws_instance_types.csv`` (the offline snapshot described in its own README). The output is
the snapshot format read by :mod:`perdollar.catalog.snapshot`: ``accelerators.csv``, ``aliases.csv``,
``instance_types.csv.gz``, ``offers.csv.gz`` and ``manifest.json`` (sources, data dates, counts,
flag meanings). Chips that benchmarks measure but no cloud rents (GeForce and workstation boards,
older data-center cards) come from the package's ``accelerator_specs_more.csv``, each row sourced.

The GPU clouds' list prices (Lambda, RunPod, Nebius, CoreWeave, Hyperstack, Vultr) come from the
package's ``gpu_cloud_offers.csv``, each row dated and sourced; their machines are made by the same
mapping as a gpuhunt refresh makes them, and each offer keeps its row's date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import math
import tempfile
from pathlib import Path

import pandas as pd

from perdollar.catalog import provenance
from perdollar.catalog.ahead_machines import ahead_only_machines
from perdollar.catalog.catalog import Catalog
from perdollar.catalog.documented import DOCUMENTED_ACCELERATORS, with_documented_accelerators
from perdollar.catalog.gpu_cloud_table import (
    GPU_CLOUD_OFFERS,
    GPU_CLOUD_PRICE_BASIS,
    GpuCloudOffer,
    read_gpu_cloud_offers,
)
from perdollar.catalog.model import InstanceType
from perdollar.catalog.refresh_gpuhunt import map_provider
from perdollar.catalog.retired import RETIRED_MACHINES, retired_sources, with_retired_machines
from perdollar.catalog.snapshot import OFFER_COLUMNS, OFFER_LATER_COLUMNS, read_snapshot
from perdollar.catalog.snapshot_write import catalog_frames, write_snapshot
from perdollar.catalog.spec_fills import SPEC_FILLS, with_spec_fills
from perdollar.catalog.spot_zones import aws_zone_means, spot_prices
from perdollar.catalog.stacks import software_stack_for

BUNDLED_DIR = Path(__file__).parent / "data"
# GCP/Azure network bandwidth is not in the offline data; these rows add it, each with its source.
NETWORK_KNOWN = Path(__file__).parent / "network_known.csv"
# Chips the data folder's table lacks, so that measurements made on them can be read and predicted.
MORE_SPECS = Path(__file__).parent / "accelerator_specs_more.csv"
# Names that tools print for a chip and that its key and the data folder's aliases do not cover.
MORE_ALIASES = Path(__file__).parent / "aliases_more.csv"


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _flags_for(note: str, market: str) -> list[str]:
    flags: list[str] = []
    for needle, flag, markets in provenance.FLAG_RULES:
        if needle in note and markets in ("both", market):
            flags.append(flag)
    return flags


def _gcp_instance_name(row: dict) -> str:
    # N1 hosts take any GPU count, so the same host name appears with several GPU shapes;
    # the attached GPUs become part of the name to keep (cloud, name) unique.
    name = str(row["instance_type"])
    accelerator = _text(row["accelerator_name"])
    if name.startswith("n1-") and accelerator:
        return f"{name}+{int(row['accelerator_count'])}x{accelerator}"
    return name


def _arch(value: object) -> str:
    text = _text(value)
    return {"x86_64": "amd64", "": "amd64"}.get(text, text)


def _specs(data_dir: Path) -> pd.DataFrame:
    """The data folder's accelerator table, its blank cells filled where the package has a figure,
    and the package's rows for chips it lacks (the folder wins where both have a value)."""
    specs = with_spec_fills(pd.read_csv(data_dir / "accelerator_specs.csv"))
    more = pd.read_csv(MORE_SPECS)
    more = more[~more["accelerator_key"].isin(specs["accelerator_key"])]
    return pd.concat([specs, more], ignore_index=True)


def build_frames(data_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return (accelerators, aliases, instance_types, offers) frames in the snapshot schema."""
    unified = pd.read_csv(data_dir / "instances_unified.csv", dtype={"accelerator_name": "object"})
    specs = _specs(data_dir)
    measurement_aliases = pd.read_csv(data_dir / "gpu_name_aliases.csv")
    aws_types = pd.read_csv(data_dir / "aws_instance_types.csv")

    accelerators = pd.DataFrame(
        {
            "key": specs["accelerator_key"],
            "vendor": specs["vendor"],
            "family": specs["family"],
            "variant": specs["variant"],
            "architecture": specs["architecture"].fillna(""),
            "memory_gib": specs["memory_gb"],
            "memory_bandwidth_gbps": specs["memory_bandwidth_gbps"],
            "memory_type": specs["memory_type"].fillna(""),
            "peak_fp32_tflops": specs["peak_fp32_tflops"],
            "peak_tf32_tflops": specs["peak_tf32_tflops_dense"],
            "peak_fp16_tflops": specs["peak_fp16_tflops_dense"],
            "peak_bf16_tflops": specs["peak_bf16_tflops_dense"],
            "peak_fp8_tflops": specs["peak_fp8_tflops_dense"],
            "peak_int8_tops": specs["peak_int8_tops_dense"],
            "peak_fp4_tflops": specs["peak_fp4_tflops_dense"],
            "interconnect": specs["interconnect"].fillna(""),
            "interconnect_bandwidth_gbps": specs["interconnect_bandwidth_gbps"],
            "software_stack": [
                software_stack_for(v, f) for v, f in zip(specs["vendor"], specs["family"], strict=True)
            ],
            "tdp_w": specs["tdp_w"],
            "compute_capability": specs["compute_capability"].map(
                lambda v: "" if pd.isna(v) else f"{float(v):.1f}"
            ),
            "sm_count": specs["sm_count"].astype("Int64"),
            "boost_clock_mhz": specs["boost_clock_mhz"],
            "form_factor": specs["form_factor"],
            "confidence": specs["confidence"],
            "source": specs["source"],
            "notes": specs["notes"].fillna(""),
        }
    )

    # Catalog names (A10G, A100-80GB, tpu-v5litepod-8, …) → the key most instance types use.
    pairs = (
        unified.dropna(subset=["accelerator_name"])
        .groupby(["accelerator_name", "accelerator_spec_key"])
        .size()
        .reset_index(name="rows")
        .sort_values(["accelerator_name", "rows"], ascending=[True, False])
        .drop_duplicates("accelerator_name")
    )
    alias_rows = [
        {"alias": name, "accelerator_key": key, "kind": "catalog"}
        for name, key in zip(pairs["accelerator_name"], pairs["accelerator_spec_key"], strict=True)
        if not str(name).startswith("tpu-")
    ]
    alias_rows += [
        {"alias": name, "accelerator_key": key, "kind": "measurement"}
        for name, key in zip(
            measurement_aliases["measurement_gpu_name"], measurement_aliases["accelerator_key"], strict=False
        )
    ]
    more_aliases = pd.read_csv(MORE_ALIASES)
    alias_rows += [
        {"alias": name, "accelerator_key": key, "kind": "measurement"}
        for name, key in zip(more_aliases["alias"], more_aliases["accelerator_key"], strict=True)
    ]
    aliases = pd.DataFrame(alias_rows).drop_duplicates("alias")

    aws_specs = aws_types.set_index("instance_type")
    unified = unified.assign(
        name=[
            _gcp_instance_name(row) if row["cloud"] == "gcp" else row["instance_type"]
            for row in unified.to_dict("records")
        ]
    )

    types = unified.drop_duplicates(["cloud", "name"]).copy()

    def local_disk(row: pd.Series) -> float:
        known = row["cloud"] == "aws" and row["name"] in aws_specs.index
        value = aws_specs.at[row["name"], "local_nvme_gb"] if known else math.nan
        return float(value) if pd.notna(value) else math.nan

    instance_types = pd.DataFrame(
        {
            "cloud": types["cloud"],
            "name": types["name"],
            "vcpus": types["vcpus"],
            "memory_gib": types["memory_gib"],
            "arch": types["arch"].map(_arch),
            "accelerator_name": types["accelerator_name"].fillna(""),
            "accelerator_key": types["accelerator_spec_key"].fillna(""),
            "accelerator_count": types["accelerator_count"],
            "accelerator_memory_gib_total": types["accelerator_memory_gib_total"],
            "network_gbps": types["network_bandwidth_gbps"],
            "efa_interfaces": types["efa_interfaces"].fillna(0).astype(int),
            "local_disk_gb": [local_disk(r) for _, r in types.iterrows()],
        }
    ).sort_values(["cloud", "name"])

    known_network = pd.read_csv(NETWORK_KNOWN).set_index(["cloud", "instance_type"])["network_gbps"]
    filled = [
        known_network.get((cloud, name), gbps) if pd.isna(gbps) else gbps
        for cloud, name, gbps in zip(
            instance_types["cloud"], instance_types["name"], instance_types["network_gbps"], strict=True
        )
    ]
    instance_types["network_gbps"] = filled
    ahead = ahead_only_machines(aws_types, instance_types, accelerators, aliases)
    instance_types = with_documented_accelerators(pd.concat([instance_types, ahead], ignore_index=True))
    offers = _offer_rows(unified, aws_zone_means(data_dir))
    gpu_types, gpu_offers = gpu_cloud_frames(accelerators, aliases, instance_types)
    instance_types = pd.concat([instance_types, gpu_types], ignore_index=True).sort_values(["cloud", "name"])
    instance_types = with_retired_machines(instance_types)
    offers = pd.concat([offers, gpu_offers], ignore_index=True)
    return accelerators, aliases, instance_types, offers


def gpu_cloud_frames(
    accelerators: pd.DataFrame,
    aliases: pd.DataFrame,
    instance_types: pd.DataFrame,
    offers: tuple[GpuCloudOffer, ...] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(instance_types, offers) frames of the GPU-cloud table's rows, in the snapshot schema.

    The rows are mapped by the refresh's own code (:func:`map_provider`) against the rest of the
    snapshot, whose chips and names tell which accelerator a row means; a row whose chip the
    catalog lacks, or two rows that would make one offer, stop the build.
    """
    rows = read_gpu_cloud_offers() if offers is None else offers
    with tempfile.TemporaryDirectory() as folder:
        no_offers = pd.DataFrame(columns=list(OFFER_COLUMNS))
        write_snapshot(
            Path(folder), accelerators, aliases, instance_types, no_offers, {"snapshot_id": "base"}
        )
        base = read_snapshot(Path(folder))
    by_date: dict[tuple[str, dt.date], list[GpuCloudOffer]] = {}
    for row in rows:
        by_date.setdefault((row.provider, row.read_on), []).append(row)
    machines: dict[tuple[str, str], InstanceType] = {}
    mapped_offers = []
    for (cloud, day), group in by_date.items():
        mapped = map_provider(
            base, cloud, [r.gpuhunt_row() for r in group], day, f"{GPU_CLOUD_PRICE_BASIS}:{cloud}"
        )
        if mapped.unknown_accelerators:
            names = ", ".join(sorted(mapped.unknown_accelerators))
            raise ValueError(f"{GPU_CLOUD_OFFERS.name}: {cloud} rows name chips the catalog lacks ({names})")
        if len(mapped.offers) != len(group):
            raise ValueError(f"{GPU_CLOUD_OFFERS.name}: {cloud} rows of {day} do not make one offer each")
        machines.update(mapped.instance_types)
        mapped_offers.extend(mapped.offers)
    table = Catalog(
        accelerators=base.accelerators, instance_types=machines, offers=tuple(mapped_offers),
        captured_at="", snapshot_id="gpu-clouds",
    )  # fmt: skip
    _, _, types, offer_frame = catalog_frames(table)
    types["memory_gib"] = types["memory_gib"].round(3)  # GiB stated → GB → GiB again
    return types, offer_frame


def gpu_cloud_sources(rows: tuple[GpuCloudOffer, ...]) -> dict[str, str]:
    """Per GPU cloud: the pages its bundled prices were read from, and when."""
    pages: dict[str, dict[str, None]] = {}
    for row in rows:
        via = f" (transcribed in {row.transcription})" if row.transcription else ""
        pages.setdefault(row.provider, {})[f"{row.source_url}, read {row.read_on}{via}"] = None
    return {provider: "; ".join(found) for provider, found in pages.items()}


def _offer_rows(unified: pd.DataFrame, zone_means: dict[tuple[str, str], float]) -> pd.DataFrame:
    rows: list[dict[str, object]] = []
    for row in unified.to_dict("records"):
        note = _text(row["price_note"])
        cloud = row["cloud"]
        if cloud == "aws":
            cpu_row = "aws_ondemand_prices" in _text(row["source_file"])
            on_demand_date = provenance.AWS_CPU_PRICE_DATE if cpu_row else provenance.AWS_GPU_PRICE_DATE
        else:
            on_demand_date = provenance.GCP_AZURE_DATE
        common = {"cloud": cloud, "instance_type": row["name"], "region": row["region"]}
        rows.append(
            {
                **common,
                "market": "on-demand",
                "price_per_hour": row["price_ondemand_usd_per_hr"],
                "price_max_per_hour": math.nan,
                "price_min_per_hour": math.nan,
                "captured_at": on_demand_date,
                "price_basis": f"{cloud}_list_price"
                + (
                    "_vm_plus_gpu"
                    if _text(row["composition"]) and "VM (" in _text(row["composition"])
                    else ""
                ),
                "interruption_bucket": "",
                "flags": ";".join(_flags_for(note, "on-demand")),
            }
        )
        if pd.isna(row["price_spot_usd_per_hr"]):
            continue
        spot, lowest, basis = spot_prices(row, zone_means)
        flags = _flags_for(note, "spot")
        spot_date = on_demand_date
        if basis.startswith("estimated"):
            flags.append("spot-price-estimated-from-advisor")
            spot_date = (
                provenance.AWS_ADVISOR_DATE
                if cloud == "aws" and on_demand_date == provenance.AWS_CPU_PRICE_DATE
                else spot_date
            )
        rows.append(
            {
                **common,
                "market": "spot",
                "price_per_hour": spot,
                "price_max_per_hour": row["price_spot_max_usd_per_hr"],
                "price_min_per_hour": lowest,
                "captured_at": spot_date,
                "price_basis": basis,
                "interruption_bucket": _text(row["spot_interrupt_bucket"]) if cloud == "aws" else "",
                "flags": ";".join(flags),
            }
        )
    return pd.DataFrame(rows)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(data_dir: Path, out_dir: Path = BUNDLED_DIR) -> Path:
    accelerators, aliases, instance_types, offers = build_frames(data_dir)
    sources = {
        name: {"sha256": _sha256(data_dir / name)}
        for name in (
            "instances_unified.csv",
            "aws_gpu_instances_by_region.csv",
            "accelerator_specs.csv",
            "gpu_name_aliases.csv",
            "aws_instance_types.csv",
        )
    }
    package_tables = (NETWORK_KNOWN, MORE_SPECS, SPEC_FILLS, MORE_ALIASES, DOCUMENTED_ACCELERATORS,
                      GPU_CLOUD_OFFERS, RETIRED_MACHINES)  # fmt: skip
    sources.update({f"{path.name} (package)": {"sha256": _sha256(path)} for path in package_tables})
    manifest = {
        "snapshot_id": "bundled-"
        + hashlib.sha256("".join(s["sha256"] for s in sources.values()).encode()).hexdigest()[:12],
        "kind": "bundled",
        "built_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "captured_at": max(offers["captured_at"]),
        "oldest_price_date": min(offers["captured_at"]),
        "data_dates": {
            **provenance.data_dates(),
            **{
                f"gpu_cloud:{cloud}": text
                for cloud, text in gpu_cloud_sources(read_gpu_cloud_offers()).items()
            },
        },
        "sources": sources,
        "conventions": provenance.conventions(),
        "network_gbps_sources": {
            f"{row.cloud}:{row.instance_type}": f"{row.network_gbps:g} Gbps, {row.fabric}; {row.source}"
            for row in pd.read_csv(NETWORK_KNOWN).itertuples()
        },
        "accelerator_sources": {
            f"{row.cloud}:{row.instance_type}": row.source
            for row in pd.read_csv(DOCUMENTED_ACCELERATORS).itertuples()
        },
        "retired_sources": retired_sources(instance_types),
        "flags": provenance.FLAG_MEANINGS,
        "counts": {
            "accelerators": len(accelerators),
            "instance_types": len(instance_types),
            "offers": len(offers),
            "offers_by_cloud": offers["cloud"].value_counts().sort_index().to_dict(),
        },
    }
    write_snapshot(
        out_dir,
        accelerators,
        aliases,
        instance_types,
        offers[[*OFFER_COLUMNS, *OFFER_LATER_COLUMNS]],
        manifest,
    )
    return out_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="folder with instances_unified.csv and friends")
    parser.add_argument(
        "--out", type=Path, default=BUNDLED_DIR, help="output folder (default: the package's)"
    )
    args = parser.parse_args(argv)
    out = build(args.data_dir, args.out)
    print(f"wrote snapshot to {out}")


if __name__ == "__main__":
    main()
