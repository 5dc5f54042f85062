"""Refreshing the catalog from a recorded gpuhunt catalog: the pure mapping, then the real CLI."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.catalog.gpuhunt_rows import fetch_gpuhunt, read_catalog_files
from perdollar.catalog.refresh_gpuhunt import accelerator_key, build_refresh
from perdollar.errors import PerdollarError

FIXTURE = Path(__file__).parent / "fixtures" / "gpuhunt"
DAY = dt.date(2026, 11, 20)


def _refreshed() -> tuple[catalog.Catalog, catalog.Catalog]:
    base = catalog.load()
    sources, failed = read_catalog_files(FIXTURE, [], DAY)
    assert failed == {}
    result = build_refresh(base, sources)
    fresh = catalog.Catalog(
        accelerators=base.accelerators, instance_types=result.instance_types, offers=tuple(result.offers),
        captured_at=DAY.isoformat(), snapshot_id="test", aliases=base.aliases,
    )  # fmt: skip
    return base, fresh


def _offer(cat: catalog.Catalog, cloud: str, name: str, region: str, market: str) -> catalog.Offer:
    (found,) = [
        o for o in cat.offers
        if (o.cloud, o.instance_type, o.region, o.market) == (cloud, name, region, market)
    ]  # fmt: skip
    return found


def test_gpuhunt_rows_become_offers_in_the_snapshot_schema() -> None:
    _, fresh = _refreshed()
    assert {"aws", "gcp", "azure", "lambda", "runpod"} <= set(fresh.clouds)
    g5 = _offer(fresh, "aws", "g5.xlarge", "us-east-1", "on-demand")
    assert (g5.price_per_hour, g5.captured_at, g5.price_basis) == (1.006, DAY, "gpuhunt:aws")
    spot = _offer(fresh, "aws", "g5.xlarge", "us-east-1", "spot")
    # two zones: ranked at their median, with the lowest and highest kept
    assert (spot.price_min_per_hour, spot.price_per_hour, spot.price_max_per_hour) == (
        0.3951,
        0.40835,
        0.4216,
    )
    assert spot.interruption_bucket == ">20%"  # the Spot Advisor's, kept from the previous snapshot
    # GCP zones are priced per region, cheapest zone first; N1 hosts carry their GPUs in the name
    gcp_spot = _offer(fresh, "gcp", "g2-standard-4", "us-central1", "spot")
    assert (gcp_spot.price_min_per_hour, gcp_spot.price_per_hour) == (0.28273, (0.28273 + 0.29598) / 2)
    assert _offer(fresh, "gcp", "n1-highmem-16+4xP100", "us-central1", "on-demand").price_per_hour == 4.40
    # a refreshed cloud is replaced whole; regions gpuhunt did not list are gone
    assert not [o for o in fresh.offers if o.cloud == "aws" and o.region == "ap-northeast-1"]


def test_gpu_clouds_get_instance_types_from_the_rows() -> None:
    _, fresh = _refreshed()
    node = fresh.instance("gpu_8x_h100_sxm5", "lambda")
    assert (node.accelerator_key, node.accelerator_count, node.accelerator_memory_gib_total) == (
        "H100-SXM5-80GB",
        8,
        640.0,
    )
    assert node.vcpus == 208 and node.memory_gib == pytest.approx(1933.2e9 / 2**30)
    # the form factor in the name picks the board gpuhunt's family name leaves open
    assert fresh.instance("gpu_1x_h100_pcie", "lambda").accelerator_key == "H100-PCIe-80GB"
    # RunPod rents a GPU type by the GPU: one instance type per count
    assert fresh.instance("NVIDIA H100 80GB HBM3 x2", "runpod").accelerator_count == 2
    assert fresh.instance("NVIDIA GeForce RTX 4090", "runpod").accelerator_key == "RTX-4090"
    with pytest.raises(PerdollarError):  # an accelerator the catalog does not know is left out
        fresh.instance("NVIDIA RTX PRO 6000 Blackwell Server Edition", "runpod")


def test_an_hgx_machine_carries_sxm_boards() -> None:
    base = catalog.load()
    # gpuhunt names the family only, and an A100 with 80 GB is both a PCIe card and an SXM module
    assert accelerator_key(base, "A100", 80, "8x NVIDIA HGX A100") == "A100-SXM4-80GB"
    assert accelerator_key(base, "A100", 80, "gpu_8x_a100_pcie") == "A100-PCIe-80GB"


def test_curated_facts_survive_a_refresh() -> None:
    base, fresh = _refreshed()
    slice_ = fresh.instance("Standard_NV4as_v4")
    assert (slice_.accelerator_count, slice_.accelerator_memory_gib_total) == (0.125, 2.0)
    assert slice_.excluded_reason == base.instance("Standard_NV4as_v4").excluded_reason != ""
    assert fresh.instance("p5.48xlarge").efa_interfaces == base.instance("p5.48xlarge").efa_interfaces


def test_a_provider_whose_file_is_broken_is_named_and_the_rest_refresh(tmp_path: Path) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(FIXTURE, folder)
    text = (folder / "runpod.csv").read_text().replace("2.69", "two", 1)
    (folder / "runpod.csv").write_text(text)
    sources, failed = read_catalog_files(folder, [], DAY)
    assert set(failed) == {"runpod"} and "price 'two' is not a number" in failed["runpod"]
    assert {s.provider for s in sources} == {"aws", "gcp", "azure", "lambdalabs"}
    result = build_refresh(catalog.load(), sources)
    assert "runpod" not in result.refreshed


def test_file_dates_are_the_capture_dates_by_default(tmp_path: Path) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(FIXTURE, folder)
    old = dt.datetime(2026, 10, 1, 12, tzinfo=dt.UTC).timestamp()
    os.utime(folder / "lambdalabs.csv", (old, old))
    sources, _ = read_catalog_files(folder, ["lambdalabs", "aws"], None)
    dates = {s.provider: s.captured_at for s in sources}
    assert dates["lambdalabs"] == dt.date(2026, 10, 1) and dates["aws"] > dt.date(2026, 10, 1)


def test_without_gpuhunt_the_fetch_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gpuhunt", None)  # import gpuhunt now raises ImportError
    with pytest.raises(PerdollarError, match=r"perdollar\[prices\]"):
        fetch_gpuhunt(["aws"], DAY)


def test_refresh_from_files_then_recommend_ranks_the_new_clouds_with_dates() -> None:
    result = run_perdollar(
        "catalog", "refresh", "--from", str(FIXTURE), "--captured-at", "2026-11-20", "--json"
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert set(summary["offers_by_cloud"]) == {"aws", "gcp", "azure", "lambda", "runpod"}
    assert summary["rows_with_unknown_accelerators"] == {"RTXPRO6000": 1}
    gpus = run_perdollar("catalog", "gpus", "--accelerator", "H100", "--json")
    assert gpus.returncode == 0, gpus.stderr
    rows = {r["accelerator_key"]: r for r in json.loads(gpus.stdout)}
    h100 = rows["H100-SXM5-80GB"]
    # cheapest SXM H100 hour: RunPod's $2.69, under Lambda's 8 × $2.99 and AWS's $55.04 / 8
    assert (h100["on_demand_per_gpu_hour"], h100["on_demand_cloud"]) == (2.69, "runpod")
    assert rows["H100-PCIe-80GB"]["on_demand_per_gpu_hour"] == 2.49  # Lambda's PCIe board
    assert (
        h100["spot_per_gpu_hour"] == pytest.approx(22.6125 / 8) and h100["spot_captured_at"] == "2026-11-20"
    )
    answer = run_perdollar("recommend", "resnet50", "--epochs", "1", "--dataset-size", "100k",
                           "--cloud", "runpod", "--cloud", "lambda", "--json")  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    estimates = json.loads(answer.stdout)["estimates"]
    assert {e["cloud"] for e in estimates if e["feasible"]} <= {"runpod", "lambda"}
    assert all(e["price_captured_at"] == "2026-11-20" for e in estimates if e["feasible"])


@pytest.mark.parametrize(("args", "message"), [
    (("--provider", "oracle-cloud"), "unknown provider 'oracle-cloud'"),
    (("--from", "no-such-folder"), "does not exist"),
    (("--from", str(FIXTURE / "README.md")), "no gpuhunt catalog file"),
    (("--source", "vantage"), "unknown source 'vantage'"),
])  # fmt: skip
def test_bad_input_is_one_line_and_keeps_the_catalog(args: tuple[str, ...], message: str) -> None:
    result = run_perdollar("catalog", "refresh", *args)
    assert result.returncode == 2, result.stdout
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert catalog.load().snapshot_id.startswith("bundled-")


def test_a_malformed_source_for_every_provider_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "aws.csv").write_text("instance_name,location\ng5.xlarge,us-east-1\n")
    result = run_perdollar("catalog", "refresh", "--from", str(tmp_path))
    assert result.returncode == 2
    assert (
        "no provider could be refreshed (aws:" in result.stderr and "lacks column(s) price" in result.stderr
    )
    assert catalog.load().snapshot_id.startswith("bundled-")


def test_an_unwritable_data_folder_is_one_line_and_keeps_the_previous_snapshot(tmp_path: Path) -> None:
    first = run_perdollar(
        "catalog", "refresh", "--from", str(FIXTURE), "--provider", "aws", "--captured-at", "2026-11-01"
    )
    assert first.returncode == 0, first.stderr
    previous = catalog.load()
    before = sorted(p.name for p in previous.path.iterdir())
    blocked = tmp_path / "home"
    blocked.write_text("a file where the data folder should be")
    result = run_perdollar("catalog", "refresh", "--from", str(FIXTURE), env={"PERDOLLAR_HOME": str(blocked)})
    assert result.returncode == 2 and "cannot use the data folder" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert catalog.load().snapshot_id == previous.snapshot_id
    assert sorted(p.name for p in previous.path.iterdir()) == before


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="permissions do not bind root")
def test_a_read_only_data_folder_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "catalog").mkdir(parents=True)
    (home / "catalog").chmod(0o555)
    try:
        result = run_perdollar(
            "catalog", "refresh", "--from", str(FIXTURE), env={"PERDOLLAR_HOME": str(home)}
        )
    finally:
        (home / "catalog").chmod(0o755)
    assert result.returncode == 2 and "cannot write the new catalog snapshot" in result.stderr
    assert not list((home / "catalog").iterdir())


def test_a_zip_of_provider_catalogs_reads_like_the_folder(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "catalog.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for name in ("runpod.csv", "lambdalabs.csv"):
            out.write(FIXTURE / name, name)
    from_zip, failed = read_catalog_files(archive, ["runpod", "lambdalabs"], DAY)
    from_folder, _ = read_catalog_files(FIXTURE, ["runpod", "lambdalabs"], DAY)
    assert failed == {} and from_zip == from_folder
