"""The GPU clouds in the bundled catalog: dated, sourced list prices, asked of without --cloud."""

from __future__ import annotations

import datetime as dt
import json
import re
import socket
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.catalog.gpu_cloud_table import GPU_CLOUD_OFFERS, read_gpu_cloud_offers
from perdollar.catalog.gpuhunt_rows import read_catalog_files
from perdollar.catalog.refresh_gpuhunt import build_refresh
from perdollar.configuration import parse_configuration
from perdollar.predict.llm.frame import llm_prediction_frame
from perdollar.vocabulary import GPU_CLOUDS
from perdollar.workload.llm import load_llm_workload

GPUHUNT_FIXTURE = Path(__file__).parent / "fixtures" / "gpuhunt"
TABLE = read_gpu_cloud_offers()
READ_ON = {(r.provider, r.machine, r.location, r.market): r.read_on for r in TABLE}


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No connection can be opened: what the command prints comes from the bundled files."""

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_every_row_names_the_page_it_was_read_from_and_a_date_that_parses() -> None:
    assert set(GPU_CLOUDS) == {r.provider for r in TABLE}
    for row in TABLE:
        assert row.source_url.startswith("https://") and row.transcription
        assert dt.date(2025, 1, 1) <= row.read_on <= dt.date.today()
        per_machine = row.listed_price * (row.gpu_count if row.listed_per == "gpu-hour" else 1)
        assert row.usd_per_hour == pytest.approx(per_machine)
    # the bundled snapshot holds exactly the table's offers, each dated as its row
    bundled = catalog.load(catalog.BUNDLED_SNAPSHOT)
    offers = {(o.cloud, o.instance_type, o.region, o.market): o
              for o in bundled.offers if o.cloud in GPU_CLOUDS}  # fmt: skip
    assert {key: o.captured_at for key, o in offers.items()} == READ_ON
    assert {key: o.price_per_hour for key, o in offers.items()} == {
        (r.provider, r.machine, r.location, r.market): r.usd_per_hour for r in TABLE
    }
    for cloud in GPU_CLOUDS:
        assert "read" in bundled.manifest["data_dates"][f"gpu_cloud:{cloud}"]


@pytest.mark.parametrize(("column", "value", "message"), [
    ("read_on", "last week", "row 2: read_on 'last week' is not a date"),
    ("machine", "8x NVIDIA B200", "row 2: machine '8x NVIDIA B200' is not one lower-case token"),
    ("usd_per_hour", "6.69", "row 2: usd_per_hour 6.69 is not the listed 6.69 per gpu-hour for 8 GPU"),
    ("source_url", "lambda.ai", "row 2: source_url 'lambda.ai' is not an https address"),
])  # fmt: skip
def test_a_broken_row_is_named_with_its_row_and_value(
    tmp_path: Path, column: str, value: str, message: str
) -> None:
    header, first, *_ = GPU_CLOUD_OFFERS.read_text().splitlines()
    cells = dict(zip(header.split(","), first.split(","), strict=False))
    cells[column] = value
    broken = tmp_path / GPU_CLOUD_OFFERS.name
    broken.write_text(f"{header}\n{','.join(cells.values())}\n")
    with pytest.raises(ValueError, match=re.escape(message)):
        read_gpu_cloud_offers(broken)


@pytest.mark.usefixtures("offline")
def test_catalog_of_a_gpu_cloud_lists_its_offers_with_their_dates_offline() -> None:
    result = run_perdollar("catalog", "--cloud", "lambda", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == sum(r.provider == "lambda" for r in TABLE)
    assert {r["cloud"] for r in rows} == {"lambda"}
    for row in rows:
        read_on = READ_ON[("lambda", row["instance_type"], row["region"], "on-demand")]
        assert row["captured_at"] == read_on.isoformat()
    table = run_perdollar("catalog", "--cloud", "lambda")
    assert table.returncode == 0, table.stderr
    assert "priced" in table.stdout and "h100-sxm-x8" in table.stdout
    assert READ_ON[("lambda", "h100-sxm-x8", "any", "on-demand")].isoformat() in table.stdout
    shown = run_perdollar("catalog", "show", "h100-sxm-x8", "--json")
    assert shown.returncode == 0, shown.stderr
    (row,) = [r for r in TABLE if (r.provider, r.machine) == ("lambda", "h100-sxm-x8")]
    assert any(row.listed_as in n and row.source_url in n and str(row.read_on) in n
               for n in json.loads(shown.stdout)["notes"])  # fmt: skip


@pytest.mark.usefixtures("offline")
def test_the_cheapest_h100_hours_include_a_gpu_cloud() -> None:
    result = run_perdollar("catalog", "gpus", "--accelerator", "H100", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["accelerator_key"]: r for r in json.loads(result.stdout)}
    assert any(r["on_demand_cloud"] in GPU_CLOUDS for r in rows.values())
    # no hyperscaler rents a lone H100 PCIe board: Lambda's is the only one, at its table price
    pcie = rows["H100-PCIe-80GB"]
    assert (pcie["on_demand_cloud"], pcie["on_demand_per_gpu_hour"]) == ("lambda", 3.29)
    read_on = READ_ON[("lambda", "h100-pcie-x1", "any", "on-demand")]
    assert pcie["on_demand_captured_at"] == read_on.isoformat()


@pytest.mark.usefixtures("offline")
def test_a_question_without_clouds_ranks_gpu_cloud_offers_on_one_node_only() -> None:
    result = run_perdollar(
        "recommend", "vit-b16", "--samples", "1e9", "--market", "on-demand", "--max-nodes", "4", "--json"
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    ranked = [e for e in answer["estimates"] if e["feasible"]]
    gpu_clouds = [e for e in ranked if e["cloud"] in GPU_CLOUDS]
    assert gpu_clouds and {e["cloud"] for e in ranked} - set(GPU_CLOUDS)  # they compete with the others
    for estimate in gpu_clouds:
        key = (estimate["cloud"], estimate["instance_type"], estimate["region"], estimate["market"])
        assert estimate["price_captured_at"] == READ_ON[key].isoformat()
        # the label reads back as the configuration it names, as every other label does
        named = parse_configuration(estimate["label"])
        assert (named.cloud, named.instance_type, named.region, named.market) == key
    # several machines of a GPU cloud are no cluster: no candidate at all, and the answer says so
    assert not [e for e in answer["estimates"] if e["cloud"] in GPU_CLOUDS and e["nodes"] > 1]
    assert any(e["nodes"] > 1 for e in ranked)  # a hyperscaler's cluster still may be
    (note,) = [n for n in answer["notes"] if n.startswith("one node only on ")]
    assert all(cloud in note for cloud in {e["cloud"] for e in gpu_clouds})
    assert "no network between their machines" in note


@pytest.mark.usefixtures("offline")
def test_a_cluster_of_gpu_cloud_machines_asked_for_by_name_says_why_it_is_none() -> None:
    result = run_perdollar("compare", "vit-b16", "2x h100-sxm-x8 (lambda any)", "1x h100-sxm-x8 (lambda any)",
                           "--samples", "1e8", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    two, one = json.loads(result.stdout)["comparison"]["estimates"]
    assert two["excluded_reason"] == "lambda states no network between its machines: one node only"
    assert one["excluded_reason"] == ""


def test_a_language_model_is_not_planned_across_gpu_cloud_machines() -> None:
    bundled = catalog.load(catalog.BUNDLED_SNAPSHOT)
    keys = [("lambda", "h100-sxm-x8"), ("aws", "p5.48xlarge")]
    two = catalog.Catalog(
        accelerators=bundled.accelerators, instance_types={k: bundled.instance_types[k] for k in keys},
        offers=(), captured_at=bundled.captured_at, snapshot_id="two", aliases=bundled.aliases,
    )  # fmt: skip
    frame = llm_prediction_frame(load_llm_workload("llama-3.1-8b"), two, (1, 2), keep=False)
    reason = frame.set_index(["cloud", "nodes"])["excluded_reason"]
    assert reason[("lambda", 1)] == "" and reason[("aws", 2)] == ""
    assert reason[("lambda", 2)] == "lambda states no network between its machines: one node only"


def test_a_refresh_that_brings_a_provider_replaces_its_bundled_rows() -> None:
    base = catalog.load(catalog.BUNDLED_SNAPSHOT)
    bundled_lambda = {o.instance_type for o in base.offers if o.cloud == "lambda"}
    assert bundled_lambda  # the bundled catalog has Lambda's table rows to replace
    day = dt.date(2026, 11, 20)
    sources, failed = read_catalog_files(GPUHUNT_FIXTURE, ["lambdalabs"], day)
    assert failed == {}
    result = build_refresh(base, sources)
    fresh = [o for o in result.offers if o.cloud == "lambda"]
    assert len(fresh) == result.refreshed["lambda"] == 4
    assert all(o.captured_at == day and o.price_basis == "gpuhunt:lambdalabs" for o in fresh)
    assert not bundled_lambda & {o.instance_type for o in fresh}
    assert not bundled_lambda & {name for cloud, name in result.instance_types if cloud == "lambda"}
    # the providers not refreshed keep their bundled rows, dates and all
    kept = {(o.cloud, o.instance_type, o.region, o.market): o.captured_at for o in result.offers
            if o.cloud in GPU_CLOUDS and o.cloud != "lambda"}  # fmt: skip
    assert kept == {key: day for key, day in READ_ON.items() if key[0] != "lambda"}


@pytest.mark.parametrize("command", [("recommend",), ("catalog",), ("catalog", "gpus")])
def test_help_that_lists_clouds_names_the_gpu_clouds(command: tuple[str, ...]) -> None:
    result = run_perdollar(*command, "--help", columns=400)
    assert result.returncode == 0, result.stderr
    assert all(cloud in result.stdout for cloud in ("aws", *GPU_CLOUDS))
