"""Where the bundled snapshot's facts come from, and what its conventions and flags mean.

Kept apart from the build code so the manifest text can be read (and reviewed) on its own.
"""

from __future__ import annotations

from perdollar.catalog.committed import COMMITTED_FLAG, COMMITTED_FLAG_MEANING
from perdollar.catalog.managed import (
    MANAGED_FLAG,
    MANAGED_FLAG_MEANING,
    MANAGED_SPOT_FLAG,
    MANAGED_SPOT_FLAG_MEANING,
)
from perdollar.catalog.price_outliers import (
    PRICE_OUTLIER_FLAG,
    PRICE_OUTLIER_MEANING,
    SPOT_BELOW_PEERS_FLAG,
    SPOT_BELOW_PEERS_MEANING,
)
from perdollar.catalog.purchase import NONSTANDARD_SKU_FLAG

# Data dates of the offline sources (from the data folder's README).
AWS_GPU_PRICE_DATE = "2025-11-30"  # instances.vantage.sh dump (tsaol/aws-gpu)
AWS_CPU_PRICE_DATE = "2026-07-20"  # Karpenter's generated us-east-1 price table
AWS_ADVISOR_DATE = "2025-06-28"  # Spot Instance Advisor feed copy (alexei-led/spotinfo)
GCP_AZURE_DATE = "2026-05-20"  # anycloud-sh/catalog bot refresh

# price_note sentences of instances_unified.csv → short flags kept on every affected offer.
FLAG_RULES: tuple[tuple[str, str, str], ...] = (
    # (substring of price_note, flag, markets it applies to)
    ("inconsistent_across_regions", "gcp-gpu-sku-price-inconsistent-across-regions", "both"),
    ("H100 spot close to on-demand", "gcp-h100-spot-close-to-on-demand", "spot"),
    ("spot price equals on-demand", "spot-price-equals-on-demand", "spot"),
    ("accelerator fields empty", "accelerator-filled-in-from-size-docs", "both"),
    ("host VM price missing", "gcp-host-vm-price-missing", "both"),
    ("it is Trainium", "source-mislabels-trainium-as-inferentia", "both"),
)

FLAG_MEANINGS = {
    "gcp-gpu-sku-price-inconsistent-across-regions": (
        "GCP GPU price varies more than 2x across regions; the source may have matched a non-standard "
        "SKU (e.g. DWS/flex-start). Verify before relying on it."
    ),
    "gcp-h100-spot-close-to-on-demand": "GCP H100 spot price is close to on-demand in some regions.",
    "spot-price-equals-on-demand": "The source's spot price equals on-demand: probably no real spot offer.",
    "accelerator-filled-in-from-size-docs": (
        "The source row had no accelerator; count filled in from the Azure size documentation "
        "(SkyPilot fetch_azure.py AZURE_MISSING_GPU_COUNT)."
    ),
    "gcp-host-vm-price-missing": (
        "GCP host VM price missing (0) in the source; price is the GPUs only. Not ranked."
    ),
    "source-mislabels-trainium-as-inferentia": (
        "The source labels this GPU_model 'AWS Inferentia'; it is Trainium."
    ),
    "spot-price-estimated-from-advisor": (
        "No market spot price: estimated as on-demand x (1 - Spot Advisor savings)."
    ),
}


# Flags a refresh adds (not in the bundled manifest's list), and the mark of excluded machines.
NOT_FOR_TRAINING = "not-for-training"
REFRESH_FLAG_MEANINGS = {
    NOT_FOR_TRAINING: (
        "The machine's accelerator cannot be used by training frameworks (e.g. a virtual-desktop GPU "
        "slice); rankings leave it out and `perdollar catalog show NAME` says why."
    ),
    "interruption-bucket-from-previous-snapshot": (
        "Spot Advisor bucket carried over from the previous snapshot (no API for it)."
    ),
    PRICE_OUTLIER_FLAG: PRICE_OUTLIER_MEANING,
    SPOT_BELOW_PEERS_FLAG: SPOT_BELOW_PEERS_MEANING,
    # Derived when a question asks for them (see `perdollar catalog terms` for every dated row).
    COMMITTED_FLAG: COMMITTED_FLAG_MEANING,
    MANAGED_FLAG: MANAGED_FLAG_MEANING,
    MANAGED_SPOT_FLAG: MANAGED_SPOT_FLAG_MEANING,
    "capacity-blocks-only": (
        "AWS offers this machine through EC2 Capacity Blocks for ML (booked ahead) rather than on demand; "
        "the on-demand price may not be obtainable (capacity_constraints.csv)."
    ),
    "reservation-needed": (
        "GCP offers this machine through reservations or Dynamic Workload Scheduler rather than on demand; "
        "no on-demand or committed answer ranks it (capacity_constraints.csv)."
    ),
    "spot-or-flex-start-only": (
        "GCP sells this machine only as Spot or Flex-start VMs; no on-demand or committed answer ranks it "
        "(capacity_constraints.csv)."
    ),
    "reservation-only": (
        "GCP sells this machine only through future reservations; no answer ranks it "
        "(capacity_constraints.csv)."
    ),
    NONSTANDARD_SKU_FLAG: (
        "One of the machine's flagged GCP prices below the gap to its other regions' prices: the source "
        "matched a discounted GPU SKU (Flex-start/DWS), not the standard rate. Not ranked."
    ),
}


def flag_meanings(manifest_flags: dict[str, str] | None = None) -> dict[str, str]:
    """Every data-quality flag an offer can carry → its one-line meaning (a snapshot's own list wins)."""
    return {**FLAG_MEANINGS, **REFRESH_FLAG_MEANINGS, **(manifest_flags or {})}


def data_dates() -> dict[str, str]:
    """Capture date and origin of each input (repositories and commits as the data README gives them)."""
    return {
        "aws_gpu_prices_and_spot": AWS_GPU_PRICE_DATE + " (instances.vantage.sh dump, GitHub tsaol/aws-gpu "
        "commit 2d0108c7bd261c8e40493fbd35135437bd6c9099)",
        "aws_cpu_on_demand": AWS_CPU_PRICE_DATE + " (GitHub aws/karpenter-provider-aws "
        "zz_generated.pricing_aws.go, commit 6fc13b5236fd04fd16ff3f9dc7490d0813994099; us-east-1 only)",
        "aws_spot_advisor": AWS_ADVISOR_DATE + " (AWS Spot Instance Advisor feed via GitHub "
        "alexei-led/spotinfo commit 5eedf20a99614443af215f4aaf09bd10805cac72)",
        "aws_instance_specs": "2026-07-11 (EC2 DescribeInstanceTypes via GitHub "
        "aws/karpenter-provider-aws instance-types.md, commit 692ccdd0629e488300821443f0fa0bc3c3e08047)",
        "gcp": GCP_AZURE_DATE + " (SkyPilot-format catalog, GitHub anycloud-sh/catalog commit "
        "62ff0a987e0c257a89235415d2877812fb1aaf29)",
        "azure": GCP_AZURE_DATE + " (SkyPilot-format catalog, GitHub anycloud-sh/catalog commit "
        "62ff0a987e0c257a89235415d2877812fb1aaf29; Azure Retail Prices API)",
        "accelerator_specs": "vendor datasheets and whitepapers; per-row source column",
    }


def conventions() -> dict[str, str]:
    return {
        "prices": (
            "USD per instance-hour, Linux; spot = the typical zone's price (the zones' median; their "
            "mean where the source keeps only min/mean/max), price_min_per_hour / price_max_per_hour = "
            "lowest / highest zone"
        ),
        "gcp_gpu_machines": "host VM price + attached GPU price in the same zone, summed",
        "gcp_n1_gpu_names": "N1 hosts with GPUs are named HOST+COUNTxGPU, e.g. n1-highmem-16+4xT4",
        "tpu": (
            "one instance type per TPU slice; accelerator_count = chips; host vCPUs/memory unknown (NaN)"
        ),
        "interruption_bucket": (
            "AWS Spot Advisor monthly interruption frequency; empty = unknown (GCP, Azure)"
        ),
        "network_gbps": (
            "AWS baseline bandwidth (EC2 docs via Karpenter); GCP/Azure only for the machine types "
            "in network_gbps_sources; empty = unknown"
        ),
        "accelerator_memory_gib": "vendor-stated memory size per device, as GiB",
        "accelerator_count": (
            "devices per VM; a fraction for a GPU slice (e.g. 0.125 = one eighth), whose memory total is "
            "the slice's; see accelerator_sources"
        ),
        "excluded_reason": "why no training framework can use the machine's accelerator; empty = usable",
        "gpu_clouds": (
            "list prices from gpu_cloud_offers.csv, each offer dated when its figures were read from the "
            "provider's page (data_dates gpu_cloud:*); a price listed per GPU-hour × the machine's GPUs; "
            "region 'any' where the provider prices every region alike; network between machines not "
            "stated, so one node per training job"
        ),
    }
