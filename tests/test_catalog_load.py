"""The bundled snapshot and the loader, on good and broken snapshot folders."""

from __future__ import annotations

import gzip
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from perdollar import catalog
from perdollar.catalog.build import build_frames
from perdollar.catalog.catalog import OFFER_FRAME_COLUMNS
from perdollar.catalog.snapshot import read_snapshot
from perdollar.errors import PerdollarError
from perdollar.vocabulary import GPU_CLOUDS

TINY = Path(__file__).parent / "fixtures" / "catalog" / "tiny"


def _on_demand(cat: catalog.Catalog, name: str, region: str) -> catalog.Offer:
    return next(o for o in cat.offers if (o.instance_type, o.region, o.market) == (name, region, "on-demand"))


@pytest.fixture(scope="module")
def bundled() -> catalog.Catalog:
    return catalog.load(catalog.BUNDLED_SNAPSHOT)


def test_bundled_snapshot_covers_three_clouds_and_every_kind_of_machine(bundled: catalog.Catalog) -> None:
    by_cloud = pd.Series([o.cloud for o in bundled.offers]).value_counts()
    assert set(by_cloud.index) == {"aws", "gcp", "azure", *GPU_CLOUDS}
    assert by_cloud[["aws", "gcp", "azure"]].min() > 1000  # thousands of offers, on every hyperscaler
    stacks = {bundled.accelerators[i.accelerator_key].software_stack
              for i in bundled.instance_types.values() if i.accelerator_key}  # fmt: skip
    assert {"cuda", "rocm", "neuron", "xla", "qaic"} <= stacks
    assert any(i.is_cpu_only for i in bundled.instance_types.values() if i.cloud == "aws")
    assert any(i.is_cpu_only for i in bundled.instance_types.values() if i.cloud == "gcp")
    assert any(i.is_cpu_only for i in bundled.instance_types.values() if i.cloud == "azure")
    assert bundled.accelerator("trainium").software_stack == "neuron"
    assert bundled.instance("tpu-v5litepod-8").accelerator_count == 8


def test_bundled_snapshot_is_what_the_build_makes_from_the_shared_data(
    bundled: catalog.Catalog, shared_data: Path
) -> None:
    _, _, instance_types, offers = build_frames(shared_data)
    assert len(offers) == len(bundled.offers)
    assert len(instance_types) == len(bundled.instance_types)
    unified = pd.read_csv(shared_data / "instances_unified.csv")
    row = unified[(unified.instance_type == "g5.2xlarge") & (unified.region == "us-east-1")].iloc[0]
    offer = _on_demand(bundled, "g5.2xlarge", "us-east-1")
    assert offer.price_per_hour == row.price_ondemand_usd_per_hr


def test_gcp_gpu_machines_price_the_vm_and_its_gpus_together(
    bundled: catalog.Catalog, shared_data: Path
) -> None:
    vms = pd.read_csv(shared_data / "gcp_vms.csv")
    zone = vms[vms.AvailabilityZone == "us-central1-a"]
    host = zone[zone.InstanceType == "a2-highgpu-1g"].Price.iloc[0]
    gpu = zone[
        (zone.AcceleratorName == "A100") & (zone.AcceleratorCount == 1) & zone.InstanceType.isna()
    ].Price.iloc[0]
    offer = _on_demand(bundled, "a2-highgpu-1g", "us-central1")
    assert offer.price_per_hour == pytest.approx(host + gpu, abs=1e-4)


def test_quirks_stay_visible(bundled: catalog.Catalog) -> None:
    spot = [o for o in bundled.offers if o.market == "spot"]
    assert all(o.interruption_bucket is None for o in spot if o.cloud != "aws")
    assert any(o.interruption_bucket for o in spot if o.cloud == "aws")
    assert all(o.price_max_per_hour is None or o.price_max_per_hour >= o.price_per_hour for o in spot)
    flagged = {f for o in bundled.offers for f in o.flags}
    assert "gcp-host-vm-price-missing" in flagged
    assert "spot-price-equals-on-demand" in flagged
    assert "source-mislabels-trainium-as-inferentia" in flagged
    n1 = bundled.instance("n1-highmem-16+4xT4")
    assert (n1.accelerator_key, n1.accelerator_count) == ("T4", 4)
    assert bundled.instance_types[("gcp", "a2-highgpu-1g")].network_gbps is None  # unknown, not zero


def test_offers_frame_has_the_agreed_columns(bundled: catalog.Catalog) -> None:
    frame = bundled.offers_frame()
    assert tuple(frame.columns) == OFFER_FRAME_COLUMNS
    assert len(frame) == len(bundled.offers)
    row = frame[(frame.instance_type == "g4dn.12xlarge") & (frame.region == "us-east-1")
                & (frame.market == "on-demand")].iloc[0]  # fmt: skip
    assert (row.accelerator_key, row.accelerator_count, row.vcpus) == ("T4", 4, 48)


def test_accelerator_lookup_by_key_catalog_name_and_measurement_name(bundled: catalog.Catalog) -> None:
    assert bundled.accelerator("a10g").key == "A10G"
    assert bundled.accelerator("A100").key == "A100-SXM4-40GB"
    assert bundled.accelerator("h100-sxm5-80gb").key == "H100-SXM5-80GB"
    assert bundled.accelerator("RTX 3090").key == "RTX-3090"
    assert bundled.accelerator("tpu-v5litepod-8").key == "TPU-v5e"
    assert bundled.accelerator("AMD MI250 (one GCD as seen by PyTorch)").key == "MI250"
    with pytest.raises(PerdollarError, match="did you mean"):
        bundled.accelerator("A10GG")


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("Tesla T4", "T4"),  # T4G also says "T4": the chip that says nothing more wins
        ("NVIDIA L40S", "L40S"),
        ("H100 SXM", "H100-SXM5-80GB"),
        ("H100 NVL", "H100-NVL-94GB"),
        ("A100 80GB PCIe", "A100-PCIe-80GB"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"),
        ("GeForce RTX 4090", "RTX-4090"),
        # nvidia-smi's names: the SXM board is plain "H200", the PCIe one says NVL
        ("NVIDIA H200", "H200-SXM-141GB"),
        ("NVIDIA H200 NVL", "H200-NVL-141GB"),
        # the GH200 goes by its LPDDR5X size in nvidia-smi and TensorRT-LLM's tables
        ("NVIDIA GH200 480GB", "GH200-96GB"),
        ("GH200 120GB", "GH200-96GB"),
        ("GH200", "GH200-96GB"),
        ("GH200 (80GB HBM3 variant)", "GH200-80GB"),
        # a bare number is the plain board, never its Ti, Super or laptop relative
        ("RTX 2080", "RTX-2080"),
        ("RTX 2080 Ti", "RTX-2080-Ti"),
        ("RTX 2080 Super", "RTX-2080-Super"),
        ("RTX 2080 Super Max-Q (laptop)", "RTX-2080-Super-Max-Q"),
        ("GTX 1080", "GTX-1080"),
        ("RTX 4070 Ti", "RTX-4070-Ti"),
        ("Titan V", "TITAN-V"),
        ("Tesla V100S PCIe 32 GB", "V100S-PCIe-32GB"),
        ("Radeon Instinct MI250X", "MI250X"),
    ],
)
def test_gpu_names_as_vendors_and_papers_write_them(bundled: catalog.Catalog, written: str, key: str) -> None:
    assert bundled.accelerator(written).key == key


def test_a_name_that_fits_several_chips_is_refused_not_guessed(bundled: catalog.Catalog) -> None:
    with pytest.raises(PerdollarError, match="unknown accelerator"):
        bundled.accelerator("H100 80GB")  # SXM5 or PCIe: both fit


def test_a_name_is_not_taken_for_a_variant_it_does_not_name(bundled: catalog.Catalog) -> None:
    # The only chip with these words is the 2070 Max-Q, a lower-power laptop board than the
    # full-power 2070 laptop GPU: refusing beats predicting the wrong board.
    with pytest.raises(PerdollarError, match="unknown accelerator"):
        bundled.accelerator("GeForce RTX 2070 Laptop GPU")


def test_the_build_adds_the_package_rows_for_chips_the_data_folder_lacks(
    tmp_path: Path, shared_data: Path
) -> None:
    accelerators, _, _, _ = build_frames(shared_data)
    shared = pd.read_csv(shared_data / "accelerator_specs.csv")
    more = pd.read_csv(Path(catalog.__file__).parent / "accelerator_specs_more.csv")
    assert set(accelerators["key"]) == set(shared["accelerator_key"]) | set(more["accelerator_key"])
    assert accelerators["key"].is_unique and accelerators["source"].notna().all()
    # Where the data folder has a chip too, its row is the one kept.
    folder = tmp_path / "data"
    shutil.copytree(shared_data, folder, ignore=shutil.ignore_patterns("measurements"))
    specs = pd.read_csv(folder / "accelerator_specs.csv")
    extra = more[more["accelerator_key"] == "TITAN-V"].assign(memory_bandwidth_gbps=1.0)
    pd.concat([specs, extra]).to_csv(folder / "accelerator_specs.csv", index=False)
    rebuilt, _, _, _ = build_frames(folder)
    titan = rebuilt[rebuilt["key"] == "TITAN-V"]
    assert len(titan) == 1 and titan["memory_bandwidth_gbps"].iloc[0] == 1.0


def test_user_snapshot_takes_precedence_over_the_bundled_one(tmp_path: Path) -> None:
    from perdollar.paths import catalog_snapshot_dir

    shutil.copytree(TINY, catalog_snapshot_dir() / "20990101T000000Z-aws")
    assert catalog.load().snapshot_id == "tiny-test"


def test_tiny_snapshot_loads() -> None:
    tiny = read_snapshot(TINY)
    assert tiny.snapshot_id == "tiny-test"
    assert tiny.instance("g5.2xlarge").accelerator_key == "A10G"
    assert math.isnan(tiny.instance("tpu-v5litepod-8").vcpus)  # TPU host size: unknown


# ---- broken snapshots -------------------------------------------------------------------------
def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "snap"
    shutil.copytree(TINY, folder)
    return folder


def _rewrite_offers(folder: Path, edit) -> None:  # type: ignore[no-untyped-def]
    path = folder / "offers.csv.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    path.write_bytes(gzip.compress(("\n".join(edit(lines)) + "\n").encode()))


def test_missing_snapshot_file_is_named(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "offers.csv.gz").unlink()
    with pytest.raises(PerdollarError, match=r"offers\.csv\.gz is missing"):
        read_snapshot(folder)


def test_truncated_gzip_is_reported(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    data = (folder / "instance_types.csv.gz").read_bytes()
    (folder / "instance_types.csv.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(PerdollarError, match="truncated or corrupt"):
        read_snapshot(folder)


def test_negative_price_names_file_row_and_value(tmp_path: Path) -> None:
    folder = _copy(tmp_path)

    def negate(lines: list[str]) -> list[str]:
        header = lines[0].split(",")
        cells = lines[3].split(",")
        cells[header.index("price_per_hour")] = "-1.5"
        return [*lines[:3], ",".join(cells), *lines[4:]]

    _rewrite_offers(folder, negate)
    with pytest.raises(PerdollarError, match=r"offers\.csv\.gz row 4: price_per_hour '-1\.5' is below 0"):
        read_snapshot(folder)


def test_malformed_row_is_reported(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _rewrite_offers(folder, lambda lines: [*lines[:2], "aws,g5.2xlarge,us-east-1", *lines[2:]])
    with pytest.raises(PerdollarError, match="row 3 has 3 fields, not 10"):
        read_snapshot(folder)


def test_non_numeric_and_unknown_values_are_reported(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _rewrite_offers(
        folder, lambda lines: [lines[0], lines[1].replace("on-demand", "reserved", 1), *lines[2:]]
    )
    with pytest.raises(PerdollarError, match="market 'reserved' is not one of on-demand, spot"):
        read_snapshot(folder)
    folder = _copy(tmp_path / "again")
    _rewrite_offers(
        folder, lambda lines: [lines[0], lines[1].replace("aws,", "Oracle Cloud,", 1), *lines[2:]]
    )
    with pytest.raises(PerdollarError, match="cloud 'Oracle Cloud' is not a cloud name"):
        read_snapshot(folder)
    # any cloud name is allowed, but an offer needs its instance type
    folder = _copy(tmp_path / "third")
    _rewrite_offers(folder, lambda lines: [lines[0], lines[1].replace("aws,", "oracle,", 1), *lines[2:]])
    with pytest.raises(PerdollarError, match=r"is not in instance_types\.csv\.gz for oracle"):
        read_snapshot(folder)


def test_broken_manifest_is_reported(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "manifest.json").write_text('{"snapshot_id": ')
    with pytest.raises(PerdollarError, match="not valid JSON"):
        read_snapshot(folder)
    (folder / "manifest.json").write_text(json.dumps({"kind": "x"}))
    with pytest.raises(PerdollarError, match="no snapshot_id"):
        read_snapshot(folder)


def test_every_gcp_or_azure_network_figure_names_its_source(bundled: catalog.Catalog) -> None:
    sources = bundled.manifest["network_gbps_sources"]
    types = bundled.instance_types
    filled = [key for key, i in types.items() if key[0] != "aws" and i.network_gbps is not None]
    assert ("gcp", "a3-highgpu-8g") in filled and ("azure", "Standard_ND96isr_H100_v5") in filled
    assert all(f"{cloud}:{name}" in sources for cloud, name in filled)


def test_the_build_fills_only_blank_cells_of_the_data_folders_rows(tmp_path: Path, shared_data: Path) -> None:
    shared = pd.read_csv(shared_data / "accelerator_specs.csv").set_index("accelerator_key")
    assert pd.isna(shared.at["GH200-80GB", "memory_bandwidth_gbps"])  # what the fill is for
    accelerators, _, _, _ = build_frames(shared_data)
    gh200 = accelerators.set_index("key").loc["GH200-80GB"]
    assert gh200["memory_bandwidth_gbps"] == 3350.0
    assert "memory_bandwidth_gbps: derived" in gh200["source"]
    # Every other cell is the folder's own, and a folder that states the figure keeps it.
    unchanged = accelerators.set_index("key").loc["GH200-96GB"]
    assert unchanged["memory_bandwidth_gbps"] == shared.at["GH200-96GB", "memory_bandwidth_gbps"]
    folder = tmp_path / "data"
    shutil.copytree(shared_data, folder, ignore=shutil.ignore_patterns("measurements"))
    stated = shared.copy()
    stated.loc["GH200-80GB", "memory_bandwidth_gbps"] = 1234.0
    stated.reset_index().to_csv(folder / "accelerator_specs.csv", index=False)
    rebuilt, _, _, _ = build_frames(folder)
    kept = rebuilt.set_index("key").loc["GH200-80GB"]
    assert kept["memory_bandwidth_gbps"] == 1234.0 and "derived" not in kept["source"]


def test_bundled_catalog_knows_every_gpu_bandwidth() -> None:
    """A GPU without a memory bandwidth would be predicted at a placeholder rate."""
    missing = [
        key
        for key, chip in catalog.load().accelerators.items()
        if chip.software_stack in ("cuda", "rocm") and not chip.memory_bandwidth_gbps
    ]
    assert missing == []
