"""Where a question's data lives, resolved against the catalog: the placement the bill prices."""

from __future__ import annotations

from perdollar.catalog import Catalog
from perdollar.catalog.bill_data import cloud_of_region
from perdollar.errors import PerdollarError
from perdollar.price.bill import DataPlacement
from perdollar.question import DataSettings


def data_placement(settings: DataSettings, catalog: Catalog, state_bytes: float) -> DataPlacement:
    """The dataset's cloud, region and size (``aws:us-east-1`` or a region only one cloud has)."""
    size = settings.dataset_bytes or 0.0
    if not settings.data_region:
        return DataPlacement(state_bytes=state_bytes)
    if size <= 0:
        raise PerdollarError(
            "--data-region needs the dataset's size in bytes", "add --dataset-size 20TB (or 500GB)"
        )
    cloud, _, region = settings.data_region.rpartition(":")
    regions = {c: set(r) for c, r in catalog.regions.items()}
    if cloud:
        if region not in regions.get(cloud.lower(), set()):
            raise PerdollarError(
                f"--data-region {settings.data_region!r}: {cloud} has no region {region!r} in the catalog",
                "give a region as `perdollar catalog show` lists it",
            )
        cloud = cloud.lower()
    else:
        cloud = cloud_of_region(region, regions)
    return DataPlacement(
        size_bytes=size, cloud=cloud, region=region, copy_gbps=settings.transfer_gbps, state_bytes=state_bytes
    )
