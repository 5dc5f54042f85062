"""What the bundled catalog may rank: GCP prices against GCP's published us-central1 list, the offers
no market ranks and why, and the spot captures far below their machine's other regions.

    python benchmarks/price_checks.py
"""

from __future__ import annotations

import collections

from perdollar import catalog
from perdollar.catalog.price_outliers import SPOT_BELOW_PEERS_FLAG
from perdollar.catalog.purchase import unranked_reasons
from perdollar.catalog.standard_prices import gcp_list_prices


def main() -> None:
    offers = catalog.load().offers_frame()
    reasons = unranked_reasons(offers)
    print(f"{len(offers):,} offers in the bundled catalog")
    print("\nGCP us-central1 on demand against the published list price:")
    listed = {name: usd for (name, region), usd in gcp_list_prices().items() if region == "us-central1"}
    gcp = offers[(offers["cloud"] == "gcp") & (offers["region"] == "us-central1")]
    rows = gcp[(gcp["market"] == "on-demand") & gcp["instance_type"].isin(list(listed))]
    for name, price, why in zip(
        rows["instance_type"], rows["price_per_hour"], unranked_reasons(rows), strict=True
    ):
        state = "not ranked" if why else "ranked"
        gap = price / listed[name] - 1
        print(f"  {name:18s} ${price:9.4f}/h  list ${listed[name]:9.4f}/h  {gap:+7.2%}  {state}")
    print("\nOffers no market ranks, by reason and market:")
    counted = collections.Counter((r, m) for r, m in zip(reasons, offers["market"], strict=True) if r)
    for (reason, market), count in counted.most_common():
        print(f"  {count:4d} {market:10s} {reason[:100]}")
    spot = offers[(offers["market"] == "spot") & (offers["price_per_hour"] > 0)]
    flagged = sum(SPOT_BELOW_PEERS_FLAG in flags for flags in spot["flags"])
    print(f"\nspot prices under half their machine's median across regions: {flagged:,} of {len(spot):,}")


if __name__ == "__main__":
    main()
