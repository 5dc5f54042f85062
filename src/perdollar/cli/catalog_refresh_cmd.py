"""`perdollar catalog refresh`: current offers through gpuhunt (all clouds) or AWS's own APIs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from perdollar.cli.catalog_cmd import catalog_app
from perdollar.cli.catalog_options import RefreshSources
from perdollar.cli.common import emit_json, err_console, progress
from perdollar.cli.declared import Group, takes
from perdollar.cli.shared_options import OPTIONS, OUTPUT, Output
from perdollar.errors import PerdollarError

if TYPE_CHECKING:  # types only: the catalog readers load pandas
    from perdollar.catalog import Catalog
    from perdollar.catalog.gpuhunt_rows import ProviderOffers
    from perdollar.catalog.refresh_gpuhunt import RefreshResult

SOURCES = ("gpuhunt", "aws-api")


def _day(text: str | None) -> dt.date | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise PerdollarError(f"--captured-at {text!r} is not a date", "give YYYY-MM-DD") from None


@catalog_app.command("refresh")
@takes(asked=Group(RefreshSources, panel=OPTIONS), output=OUTPUT)
def catalog_refresh(*, asked: RefreshSources, output: Output) -> None:
    """Fetch current offers and write a new catalog snapshot that takes precedence.

    Through gpuhunt (dstack's maintained offers catalog) for AWS, GCP, Azure and the GPU clouds
    (Lambda, RunPod, Vast.ai, Nebius, OCI, …), each price dated when its provider's catalog was collected.
    A provider whose source fails keeps its previous offers and is named; the previous snapshot is
    never modified.

      perdollar catalog refresh
      perdollar catalog refresh --provider runpod --provider lambda
      perdollar catalog refresh --from ./gpuhunt-catalog --captured-at 2026-11-20
      perdollar catalog refresh --source aws-api --region us-east-1 --region us-west-2
    """  # fmt: skip
    json_output = output.json_output
    provider, region = list(asked.provider), list(asked.region)
    from_path, captured_at = asked.from_path, asked.captured_at
    source = asked.source or ("aws-api" if region else "gpuhunt")
    if source not in SOURCES:
        raise PerdollarError(f"unknown source {source!r}", f"use one of {', '.join(SOURCES)}")
    if source == "aws-api":
        _refresh_aws_api(provider, region, json_output)
        return
    _refresh_gpuhunt(provider, from_path, captured_at, json_output)


def _refresh_gpuhunt(
    provider: list[str], from_path: Path | None, captured_at: str | None, json_output: bool
) -> None:
    """The gpuhunt refresh: every provider's offers, or those of ``provider``, from gpuhunt or files."""
    from perdollar.catalog import load
    from perdollar.catalog.gpuhunt_rows import PROVIDERS, fetch_gpuhunt, provider_name, read_catalog_files
    from perdollar.catalog.refresh_gpuhunt import build_refresh, refresh_manifest
    from perdollar.catalog.snapshot_write import write_new_snapshot
    from perdollar.paths import catalog_snapshot_dir

    wanted = list(dict.fromkeys(provider_name(p) for p in provider))
    day = _day(captured_at)
    stamp = dt.datetime.now(dt.UTC)
    base = load()
    with progress("reading gpuhunt's offers", quiet=json_output):
        if from_path is not None:
            sources, failed = read_catalog_files(from_path, wanted, day)
        else:
            sources, failed = fetch_gpuhunt(wanted or list(PROVIDERS), stamp.date())
    if not sources:
        why = "; ".join(f"{p}: {reason}" for p, reason in failed.items()) or "no offers"
        raise PerdollarError(f"no provider could be refreshed ({why})", "the current catalog is unchanged")
    result = build_refresh(base, sources)
    failed = failed | result.unusable
    if not result.refreshed:
        why = "; ".join(f"{p}: {reason}" for p, reason in failed.items())
        raise PerdollarError(f"no provider could be refreshed ({why})", "the current catalog is unchanged")
    origin = str(from_path) if from_path is not None else "gpuhunt's published catalogs"
    manifest = refresh_manifest(base, result, stamp, origin=origin, failed=failed)
    folder = write_new_snapshot(
        base, result.instance_types, result.offers, manifest, _snapshot_root(catalog_snapshot_dir),
        f"{stamp:%Y%m%dT%H%M%SZ}-gpuhunt",
    )  # fmt: skip
    fresh = load(folder)
    if json_output:
        emit_json(_summary(fresh, folder, result, sources, failed))
        return
    _print_refresh(fresh, folder, result, failed)


def _summary(
    fresh: Catalog, folder: Path, result: RefreshResult, sources: list[ProviderOffers], failed: dict[str, str]
) -> dict[str, object]:
    from perdollar.catalog.gpuhunt_rows import PROVIDERS

    return {
        "snapshot_id": fresh.snapshot_id,
        "path": folder,
        "captured_at": fresh.captured_at,
        "offers_by_cloud": result.refreshed,
        "captured_at_by_cloud": {
            PROVIDERS[s.provider]: s.captured_at.isoformat()
            for s in sources
            if PROVIDERS[s.provider] in result.refreshed
        },
        "failed": failed,
        "rows_with_unknown_accelerators": result.unknown_accelerators,
        "offers": len(fresh.offers),
    }


def _print_refresh(fresh: Catalog, folder: Path, result: RefreshResult, failed: dict[str, str]) -> None:
    clouds = ", ".join(f"{cloud} {count:,}" for cloud, count in result.refreshed.items())
    err_console.print(
        escape(
            f"wrote {fresh.snapshot_id} ({clouds} offers) to {folder}; it is now the catalog perdollar uses."
        ),
        highlight=False,
    )
    for name, reason in failed.items():
        err_console.print(
            escape(f"not refreshed: {name} ({reason}); its previous offers are kept."),
            highlight=False,
            soft_wrap=True,
        )
    if result.unknown_accelerators:
        names = ", ".join(sorted(result.unknown_accelerators))
        err_console.print(f"left out (accelerator not in the catalog): {names}", highlight=False)


def _snapshot_root(make: Callable[[], Path]) -> Path:
    try:
        return make()
    except OSError as error:
        raise PerdollarError(
            f"cannot use the data folder for catalog snapshots ({error.strerror or error}: {error.filename})",
            "make it writable, or set PERDOLLAR_HOME to a writable folder",
        ) from None


def _refresh_aws_api(provider: list[str], region: list[str], json_output: bool) -> None:
    from perdollar.catalog import load
    from perdollar.catalog.refresh_aws import check_region_names, refresh_aws
    from perdollar.paths import catalog_snapshot_dir

    if any(p.lower() != "aws" for p in provider):
        raise PerdollarError(
            "--source aws-api refreshes AWS only", "drop --provider, or use --source gpuhunt"
        )
    base = load()
    check_region_names(region, base.regions.get("aws", ()))
    regions = region or sorted(base.regions.get("aws", ()))
    with progress("refreshing AWS prices", total=len(regions), quiet=json_output) as bar:
        out_root = _snapshot_root(catalog_snapshot_dir)
        folder: Path = refresh_aws(base, regions, out_root=out_root, on_region_done=bar.advance)
    fresh = load(folder)
    aws_offers = sum(1 for o in fresh.offers if o.cloud == "aws")
    summary = {"snapshot_id": fresh.snapshot_id, "path": folder, "captured_at": fresh.captured_at,
               "regions": regions, "offers": len(fresh.offers), "aws_offers": aws_offers}  # fmt: skip
    if json_output:
        emit_json(summary)
        return
    err_console.print(
        f"wrote {fresh.snapshot_id} ({aws_offers} AWS offers in {len(regions)} regions) "
        f"to {folder}; it is now the catalog perdollar uses.",
        highlight=False,
    )
