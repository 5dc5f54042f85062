"""`catalog gpus` (the per-GPU price view), `catalog flags`, and how prices age."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.catalog.gpu_prices import gpu_prices
from perdollar.catalog.price_age import age_sentence, is_stale, price_age_days, price_date_note
from perdollar.catalog.provenance import flag_meanings
from perdollar.cli.catalog_render import FLAG_MARKS


def test_the_cheapest_gpu_hour_is_the_cheapest_offer_divided_by_its_gpus() -> None:
    cat = catalog.load()
    frame = gpu_prices(cat, accelerator="A10G", cloud=["aws"])
    (row,) = frame.to_dict("records")
    # by hand: every on-demand A10G offer's price ÷ its GPU count, lowest first
    per_gpu = [
        (o.price_per_hour / cat.instance(o.instance_type, "aws").accelerator_count, o.region, o.instance_type)
        for o in cat.offers
        if o.cloud == "aws" and o.market == "on-demand"
        and cat.instance(o.instance_type, "aws").accelerator_key == "A10G"
    ]  # fmt: skip
    best = min(per_gpu)
    assert row["on_demand_per_gpu_hour"] == pytest.approx(best[0])
    assert (row["on_demand_region"], row["on_demand_instance_type"]) == (best[1], best[2])
    assert row["on_demand_captured_at"] == "2025-11-30"


def test_virtual_desktop_slices_are_not_a_gpu_hour() -> None:
    frame = gpu_prices(catalog.load(), accelerator="MI25")
    assert frame.empty  # every MI25 the catalog has is an NVv4 desktop slice


def test_memory_filter_and_one_row_per_accelerator() -> None:
    frame = gpu_prices(catalog.load(), min_memory_gib=80)
    assert len(frame) == frame["accelerator_key"].nunique() > 3
    assert (frame["memory_gib"] >= 80).all()


def test_gpus_cli_answers_where_the_cheapest_h100_hour_is_as_csv() -> None:
    result = run_perdollar("catalog", "gpus", "--accelerator", "H100", "--csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["accelerator_key"] for r in rows} == {"H100-SXM5-80GB", "H100-NVL-94GB", "H100-PCIe-80GB"}
    assert all(r["on_demand_cloud"] and r["on_demand_captured_at"] for r in rows)
    table = run_perdollar("catalog", "gpus", "--accelerator", "H100")
    assert "cheapest USD per GPU-hour" in table.stdout and "H100-SXM5-80GB" in table.stdout


def test_every_flag_in_the_catalog_and_every_table_mark_has_an_explanation() -> None:
    cat = catalog.load()
    meanings = flag_meanings(cat.manifest.get("flags"))
    used = {flag for offer in cat.offers for flag in offer.flags}
    assert used and used <= set(meanings)
    assert set(FLAG_MARKS) <= set(meanings)
    result = run_perdollar("catalog", "flags", "--json")
    assert result.returncode == 0, result.stderr
    listed = {row["flag"]: row for row in json.loads(result.stdout)}
    assert used <= set(listed)
    # machines the rankings leave out are marked in the tables, and the mark is explained too
    excluded = {key for key, it in cat.instance_types.items() if it.excluded_reason}
    assert (
        listed["not-for-training"]["offers"]
        == sum((o.cloud, o.instance_type) in excluded for o in cat.offers)
        > 0
    )
    estimated = listed["spot-price-estimated-from-advisor"]
    assert estimated["mark"] == "est." and estimated["offers"] == sum(
        "spot-price-estimated-from-advisor" in o.flags for o in cat.offers
    )


def test_price_age_and_staleness(monkeypatch: pytest.MonkeyPatch) -> None:
    assert price_age_days("2025-11-30", dt.date(2026, 1, 1)) == 32
    assert price_age_days("2026-11-20", "2026-11-23T10:00:00+00:00") == 3
    assert is_stale("2025-11-30", dt.date(2026, 1, 1)) and not is_stale("2025-12-15", dt.date(2026, 1, 1))
    monkeypatch.setenv("PERDOLLAR_STALE_PRICE_DAYS", "10")
    assert is_stale("2025-12-15", dt.date(2026, 1, 1))
    assert price_date_note("2026-07-20", "2026-07-20", dt.date(2026, 11, 1)) == ""
    assert price_date_note("2025-11-30", "2026-07-20", dt.date(2026, 11, 1)) == "price 2025-11-30 stale"
    assert "(17 days before this recommendation): stale (older than 10 days)" in age_sentence(
        "2025-12-15", dt.date(2026, 1, 1)
    )


def test_the_report_dates_old_prices_and_explains_the_flags_it_shows() -> None:
    import dataclasses

    from fixtures.store.samples import make_recommendation
    from perdollar.report.html import render_report
    from perdollar.select.serialize import recommendation_to_dict

    base = make_recommendation()
    top = dataclasses.replace(
        base.estimates[0], captured_at="2025-11-30", flags=("spot-price-estimated-from-advisor",)
    )
    recommendation = dataclasses.replace(
        base,
        estimates=(top, *base.estimates[1:]),
        catalog_captured_at="2026-07-20",
        created_at="2026-11-23T10:00:00+00:00",
    )
    page = render_report(recommendation, (), plotly_js="", generated_at="2026-11-23")
    assert "price 2025-11-30 stale" in page  # 358 days before the recommendation
    assert "spot-price-estimated-from-advisor</b>: No market spot price" in page
    record = recommendation_to_dict(recommendation)["estimates"][0]
    assert (record["price_captured_at"], record["price_age_days"], record["price_stale"]) == (
        "2025-11-30",
        358,
        True,
    )
