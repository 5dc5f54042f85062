"""Where a question's data lives, resolved against the catalog: the placement the bill prices."""

from __future__ import annotations

from perdollar.catalog import Catalog
from perdollar.catalog.bill_data import cloud_of_region
from perdollar.errors import PerdollarError
from perdollar.price.bill import DataPlacement
from perdollar.question import DataSettings


def checked_data(settings: DataSettings) -> DataSettings:
    """``settings`` when each part means something: a dataset's size prices moving the data from
    where it is stored, so a size without a region would price nothing and is refused."""
    size = settings.dataset_bytes or 0.0
    if size > 0 and not settings.data_region:
        raise PerdollarError(
            f"a dataset size ({size / 1e12:.3g} TB) prices moving the data from where it is stored,"
            " and no --data-region says where",
            "add --data-region REGION (where the data is stored, e.g. us-east-1), or drop --dataset-size",
        )
    return settings


def data_placement(settings: DataSettings, catalog: Catalog, state_bytes: float) -> DataPlacement:
    """The dataset's cloud, region and size (``aws:us-east-1`` or a region only one cloud has)."""
    size = checked_data(settings).dataset_bytes or 0.0
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
