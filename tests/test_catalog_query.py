"""DataFrame filters of the Python API (what notebooks and the CLI listing use)."""

from __future__ import annotations

import math

import pytest

from perdollar import catalog
from perdollar.errors import PerdollarError


@pytest.fixture(scope="module")
def bundled() -> catalog.Catalog:
    return catalog.load(catalog.BUNDLED_SNAPSHOT)


def test_family_filter_spans_variants_and_clouds(bundled: catalog.Catalog) -> None:
    frame = catalog.find(bundled, accelerator="a100")
    assert set(frame["accelerator_key"]) == {"A100-SXM4-40GB", "A100-SXM4-80GB", "A100-PCIe-80GB"}
    assert set(frame["cloud"]) == {"aws", "gcp", "azure", "lambda", "vultr"}
    tpus = catalog.find(bundled, accelerator="tpu")
    assert set(tpus["cloud"]) == {"gcp"} and len(tpus) > 100


def test_numeric_filters_and_market(bundled: catalog.Catalog) -> None:
    frame = catalog.find(bundled, min_accelerator_memory_gib=40, min_vcpus=32, market="spot", max_price=10)
    assert len(frame) > 0
    assert (frame["accelerator_memory_gib"] >= 40).all() and (frame["vcpus"] >= 32).all()
    assert (frame["spot_price_per_hour"] <= 10).all()
    cpu = catalog.find(bundled, cpu_only=True, cloud=["azure"], sort="vcpus")
    assert (cpu["accelerator_count"] == 0).all()
    assert list(cpu["vcpus"]) == sorted(cpu["vcpus"], reverse=True)


def test_listing_has_one_row_per_cloud_type_region(bundled: catalog.Catalog) -> None:
    listing = catalog.listing_frame(bundled)
    assert not listing.duplicated(["cloud", "instance_type", "region"]).any()
    on_demand = sum(o.market == "on-demand" for o in bundled.offers)
    assert len(listing) >= on_demand
    g5 = listing[(listing.instance_type == "g5.12xlarge") & (listing.region == "us-east-1")].iloc[0]
    assert g5.accelerator_memory_gib == pytest.approx(g5.accelerator_memory_gib_total / 4)
    assert math.isclose(g5.price_per_accelerator_hour * 4, g5.price_per_hour)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"cloud": "ibm"}, "unknown cloud"),
    ({"region": "mars-1"}, "unknown region"),
    ({"accelerator": "quantum"}, "unknown accelerator"),
    ({"market": "reserved"}, "unknown market"),
    ({"sort": "colour"}, "unknown sort key"),
    ({"max_price": -2.0}, "negative"),
])  # fmt: skip
def test_bad_filters_raise_perdollar_errors(bundled: catalog.Catalog, kwargs: dict, message: str) -> None:
    with pytest.raises(PerdollarError, match=message):
        catalog.find(bundled, **kwargs)
