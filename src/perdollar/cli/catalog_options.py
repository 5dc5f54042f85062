"""The options of ``perdollar catalog``'s listing and subcommands, declared once here and generated
onto them by :func:`perdollar.cli.declared.takes`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perdollar.question import declared
from perdollar.vocabulary import ListedMarket, ListingSort, PriceSource


@dataclass(frozen=True, slots=True)
class ListingFilter:
    """Which offers the listing keeps, in which order, and how many it shows."""

    accelerator: str | None = declared(
        None, "--accelerator", "Chip name or family, case-insensitive: a10g, A100, H100, tpu, trainium.",
        short="-a",
    )  # fmt: skip
    min_accelerator_memory: float | None = declared(
        None, "--min-accelerator-memory", "Minimum memory per accelerator, GiB."
    )
    min_accelerators: float | None = declared(None, "--min-accelerators", "Minimum accelerators.")
    min_vcpus: float | None = declared(None, "--min-vcpus", "Minimum vCPUs.")
    cpu_only: bool = declared(False, "--cpu-only", "Only instance types without accelerators.")
    market: ListedMarket | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None, "--market", "on-demand or spot: keep offers priced in that market (--max-price applies to it)."
    )
    max_price: float | None = declared(None, "--max-price", "Maximum USD per instance-hour.")
    sort: ListingSort = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        "price",
        "--sort",
        "price, spot, price-per-accelerator, accelerator-memory, vcpus, memory, accelerators, network"
        " or name.",
    )
    limit: int | None = declared(None, "--limit", "Rows to show (table default 40; JSON: all).")


@dataclass(frozen=True, slots=True)
class GpuFilter:
    """Which accelerators ``catalog gpus`` lists."""

    accelerator: str | None = declared(None, "--accelerator", "Chip or family: H100, A100, l4.", short="-a")
    min_memory: float | None = declared(None, "--min-memory", "Minimum memory per GPU, GiB.")


@dataclass(frozen=True, slots=True)
class SourceFilter:
    """Which of the bill's rates and factors ``catalog sources`` lists."""

    stale_only: bool = declared(False, "--stale", "Only the rows past their date.")


@dataclass(frozen=True, slots=True)
class RefreshSources:
    """Which providers ``catalog refresh`` fetches, from where, and as of when."""

    provider: tuple[str, ...] = declared(
        (),
        "--provider",
        "Providers to refresh (repeatable; default all): aws, gcp, azure, lambda, runpod, vastai, nebius,"
        " oci, verda, cloudrift. The others keep the current snapshot's offers.",
        aliases=("--cloud",),
    )
    # None: aws-api where regions are given, else gpuhunt.
    source: PriceSource | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None,
        "--source",
        "gpuhunt (default): every provider, no credentials (needs pip install 'perdollar[prices]' unless"
        " --from); aws-api (default with --region): AWS's own APIs with your credentials (spot price per"
        " zone now, specs).",
    )
    from_path: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None, "--from", "Read a gpuhunt catalog from files: a folder of provider CSVs, or a zip of them."
    )
    captured_at: str | None = declared(
        None, "--captured-at", "With --from: the date the files' prices were observed (default: file dates)."
    )
    region: tuple[str, ...] = declared((), "--region", "--source aws-api: AWS regions (repeatable).")


@dataclass(frozen=True, slots=True)
class QuotasTarget:
    """Which regions ``catalog quotas`` reads, and the file it writes. ``--from-cloud`` stays on the
    command: it is required, and a declared field always has a default."""

    region: tuple[str, ...] = declared(("us-east-1",), "--region", "Regions to read (repeatable).")
    out: Path = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        Path("quotas.csv"), "--out", "The quotas CSV to write.", short="-o"
    )
