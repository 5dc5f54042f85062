"""The loaded catalog: accelerators, instance types and offers, with lookups by any common name."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from perdollar.catalog.model import Accelerator, InstanceType, Offer
from perdollar.catalog.names import ec2_name_for_sagemaker, parse_instance_name, suggestion_text
from perdollar.errors import PerdollarError
from perdollar.vocabulary import CLOUDS  # the bundled snapshot's; a refresh may add GPU clouds

# What an instance type contributes to each of its offers' rows.
HARDWARE_COLUMNS = (
    "vcpus",
    "memory_gib",
    "arch",
    "accelerator_name",
    "accelerator_key",
    "accelerator_count",
    "accelerator_memory_gib_total",
    "network_gbps",
    "efa_interfaces",
)

OFFER_FRAME_COLUMNS = (
    "cloud",
    "instance_type",
    "region",
    "market",
    "price_per_hour",
    "price_max_per_hour",
    "price_min_per_hour",
    "price_age_days",
    "price_basis",
    "interruption_bucket",
    "captured_at",
    "flags",
    *HARDWARE_COLUMNS,
)


def _squash(text: str) -> str:
    """Case, spaces and punctuation do not matter in names people type ("A100 80GB" = "a100-80gb")."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


_VENDOR_WORDS = frozenset(
    {"nvidia", "tesla", "geforce", "amd", "radeon", "instinct", "gpu", "graphics", "card"}
)
_FORM_WORDS = ("sxm", "pcie", "nvl", "hgx")
# Words that make a different, faster or slower, board of the same number: "RTX 2080" is not the
# 2080 Ti, nor the laptop 2080 Max-Q. A chip whose name has one fits only a name that says it.
_VARIANT_WORDS = frozenset({"ti", "super", "max", "q", "laptop", "mobile", "xt", "xtx"})


def _name_tokens(text: str) -> frozenset[str]:
    tokens = re.split(r"[^a-z0-9]+", text.lower())
    return frozenset(t for t in tokens if t and t not in _VENDOR_WORDS)


def _without_vendor_words(text: str) -> str:
    """ "NVIDIA H200" (nvidia-smi's name of the SXM board) is the catalog's "H200"."""
    return " ".join(t for t in re.split(r"[^A-Za-z0-9]+", text) if t.lower() not in _VENDOR_WORDS)


def _token_fits(wanted: str, token: str) -> bool:
    """Tokens must be equal, except that a bare form factor ("sxm") fits its versions ("sxm5")."""
    return wanted == token or (wanted in _FORM_WORDS and token.startswith(wanted))


def check_cloud(cloud: str, known: tuple[str, ...] = CLOUDS) -> str:
    value = cloud.strip().lower()
    if value not in known:
        raise PerdollarError(f"unknown cloud {cloud!r}", f"use one of {', '.join(known)}")
    return value


@dataclass(frozen=True, eq=False)  # identity equality: hashable, usable as a cache key
class Catalog:
    """One catalog snapshot. Immutable; lookups are built lazily and cached."""

    accelerators: Mapping[str, Accelerator]
    instance_types: Mapping[tuple[str, str], InstanceType]
    offers: tuple[Offer, ...]
    captured_at: str  # newest price date in the snapshot (ISO); see oldest_price_date too
    snapshot_id: str
    aliases: Mapping[str, str] = field(default_factory=dict)  # other chip names → accelerator key
    manifest: Mapping[str, Any] = field(default_factory=dict, repr=False)
    path: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "accelerators", MappingProxyType(dict(self.accelerators)))
        object.__setattr__(self, "instance_types", MappingProxyType(dict(self.instance_types)))
        object.__setattr__(self, "aliases", MappingProxyType(dict(self.aliases)))

    def __repr__(self) -> str:  # the default would print twenty thousand offers
        return (
            f"Catalog(snapshot_id={self.snapshot_id!r}, captured_at={self.captured_at!r}, "
            f"{len(self.accelerators)} accelerators, {len(self.instance_types)} instance types, "
            f"{len(self.offers)} offers)"
        )

    @cached_property
    def clouds(self) -> tuple[str, ...]:
        """The clouds this snapshot has instance types of: the big three first, then the others."""
        present = {cloud for cloud, _ in self.instance_types}
        return tuple(c for c in CLOUDS if c in present) + tuple(sorted(present - set(CLOUDS)))

    # ---- dates -------------------------------------------------------------------------------
    @property
    def oldest_price_date(self) -> str:
        return str(
            self.manifest.get("oldest_price_date")
            or min((o.captured_at for o in self.offers), default=self.captured_at)
        )

    def age_days(self, today: dt.date | None = None) -> int:
        """Days since the newest price in the snapshot was captured."""
        return ((today or dt.date.today()) - dt.date.fromisoformat(self.captured_at[:10])).days

    # ---- accelerators ------------------------------------------------------------------------
    @cached_property
    def _accelerator_names(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for key in self.accelerators:
            names.setdefault(_squash(key), key)
        for alias, key in self.aliases.items():
            names.setdefault(_squash(alias), key)
        for instance in self.instance_types.values():
            if instance.accelerator_name and instance.accelerator_key:
                names.setdefault(_squash(instance.accelerator_name), instance.accelerator_key)
        return names

    def accelerator(self, name: str) -> Accelerator:
        """A chip by key ("A100-SXM4-40GB"), catalog name ("a10g", "A100", "tpu-v5litepod-8") or the
        GPU name a measurement uses ("RTX 3090"), case-insensitive."""
        if name in self.accelerators:
            return self.accelerators[name]
        key = (
            self._accelerator_names.get(_squash(name))
            or self._accelerator_names.get(_squash(_without_vendor_words(name)))
            or self._accelerator_by_tokens(name)
        )
        if key is None:
            known = list(self.accelerators) + list(self.aliases)
            hint = suggestion_text(name, known)
            raise PerdollarError(
                f"unknown accelerator {name!r}",
                hint or "run `perdollar catalog accelerators` to list the known ones",
            )
        return self.accelerators[key]

    @cached_property
    def _accelerator_tokens(self) -> dict[str, frozenset[str]]:
        return {
            key: _name_tokens(f"{key} {chip.family} {chip.memory_type or ''}")
            for key, chip in self.accelerators.items()
        }

    def _accelerator_by_tokens(self, name: str) -> str | None:
        """The one chip whose key names everything ``name`` does, in any order and with vendor
        words dropped ("Tesla T4", "H100 SXM", "A100 80GB PCIe", "NVIDIA L40S"); None when
        nothing or more than one chip fits."""
        wanted = _name_tokens(name)
        if not wanted:
            return None
        fits = [
            key
            for key, tokens in self._accelerator_tokens.items()
            if all(any(_token_fits(w, t) for t in tokens) for w in wanted)
            and (_name_tokens(key) & _VARIANT_WORDS) <= wanted
        ]
        # "Tesla T4" fits T4 and T4G: the chip that names nothing more wins, if only one does.
        fewest = min((len(self._accelerator_tokens[k]) for k in fits), default=0)
        best = [k for k in fits if len(self._accelerator_tokens[k]) == fewest]
        return best[0] if len(best) == 1 else None

    def accelerator_keys_matching(self, query: str) -> frozenset[str]:
        """Keys a filter like ``--accelerator A100`` means: a whole family ("A100" = 40GB, 80GB,
        PCIe), a vendor ("nvidia"), a family prefix ("tpu", "inferentia") or one exact chip."""
        wanted = _squash(query)
        keys = {
            key
            for key, chip in self.accelerators.items()
            if wanted in (_squash(chip.family), _squash(chip.vendor), _squash(key))
            or (wanted.isalpha() and _squash(chip.family).startswith(wanted))
        }
        exact = self._accelerator_names.get(wanted)
        if exact and not keys:
            keys.add(exact)
        if not keys:
            # A name the chip lookup knows (an alias such as "v5p"), or the "did you mean" error.
            keys.add(self.accelerator(query).key)
        return frozenset(keys)

    # ---- instance types ----------------------------------------------------------------------
    @cached_property
    def _names_lower(self) -> dict[str, list[tuple[str, str]]]:
        index: dict[str, list[tuple[str, str]]] = {}
        for cloud, name in self.instance_types:
            index.setdefault(name.lower(), []).append((cloud, name))
        return index

    def instance(self, name: str, cloud: str | None = None) -> InstanceType:
        """An instance type by name; SageMaker ``ml.`` names give their EC2 shape (prefix kept in
        ``name_parts``). Unknown names raise a one-line error with suggestions."""
        text = name.strip()
        cloud_filter = check_cloud(cloud, self.clouds) if cloud else None
        ec2_name = ec2_name_for_sagemaker(text)
        if ec2_name is not None:
            if cloud_filter not in (None, "aws"):
                raise PerdollarError(
                    f"{text!r} is a SageMaker (AWS) name, not {cloud_filter}",
                    "drop --cloud or use --cloud aws",
                )
            base = self.instance(ec2_name, "aws")
            return dataclasses.replace(base, name_parts=parse_instance_name(text.lower(), "aws"))
        matches = [key for key in self._names_lower.get(text.lower(), []) if cloud_filter in (None, key[0])]
        exact = [key for key in matches if key[1] == text]
        if len(exact) == 1 or (len(matches) == 1 and not exact):
            return self.instance_types[(exact or matches)[0]]
        if matches:
            clouds = ", ".join(sorted(c for c, _ in matches))
            raise PerdollarError(f"{text!r} exists on several clouds ({clouds})", "pass --cloud")
        with_gpus = sorted(
            n for (c, n) in self.instance_types if n.startswith(text + "+") and cloud_filter in (None, c)
        )
        if with_gpus:
            raise PerdollarError(
                f"{text!r} is a GCP host that takes attached GPUs",
                f"name the combination, e.g. {', '.join(with_gpus[:4])}",
            )
        candidates = [n for (c, n) in self.instance_types if cloud_filter in (None, c)]
        where = f" on {cloud_filter}" if cloud_filter else ""
        hint = suggestion_text(text, candidates)
        raise PerdollarError(
            f"unknown instance type {text!r}{where} in catalog snapshot {self.snapshot_id}",
            hint or "run `perdollar catalog` to list instance types",
        )

    def accelerator_of(self, instance: InstanceType) -> Accelerator | None:
        return self.accelerators.get(instance.accelerator_key) if instance.accelerator_key else None

    def offers_for(self, instance: InstanceType) -> list[Offer]:
        return [o for o in self._offers_by_type.get((instance.cloud, instance.name), [])]

    @cached_property
    def _offers_by_type(self) -> dict[tuple[str, str], list[Offer]]:
        index: dict[tuple[str, str], list[Offer]] = {}
        for offer in self.offers:
            index.setdefault((offer.cloud, offer.instance_type), []).append(offer)
        return index

    @cached_property
    def regions(self) -> Mapping[str, frozenset[str]]:
        found: dict[str, set[str]] = {}
        for offer in self.offers:
            found.setdefault(offer.cloud, set()).add(offer.region)
        return MappingProxyType({c: frozenset(r) for c, r in found.items()})

    # ---- frames for analysis -----------------------------------------------------------------
    def instances_frame(self) -> pd.DataFrame:
        """One row per instance type with its hardware facts."""
        return self._instances_frame.copy()

    @cached_property
    def _instances_frame(self) -> pd.DataFrame:
        rows = [
            {
                "cloud": it.cloud,
                "instance_type": it.name,
                "vcpus": it.vcpus,
                "memory_gib": it.memory_gib,
                "arch": it.arch,
                "accelerator_name": it.accelerator_name,
                "accelerator_key": it.accelerator_key,
                "accelerator_count": it.accelerator_count,
                "accelerator_memory_gib_total": it.accelerator_memory_gib_total,
                "network_gbps": it.network_gbps,
                "efa_interfaces": it.efa_interfaces,
                "local_disk_gb": it.local_disk_gb,
                "excluded_reason": it.excluded_reason,
            }
            for it in self.instance_types.values()
        ]
        return none_for_missing(pd.DataFrame(rows), ("accelerator_name", "accelerator_key"))

    def offers_frame(self) -> pd.DataFrame:
        """One row per offer joined with its instance type (columns: OFFER_FRAME_COLUMNS)."""
        return self._offers_frame.copy()

    @cached_property
    def _offers_frame(self) -> pd.DataFrame:
        offers = pd.DataFrame(
            {
                "cloud": [o.cloud for o in self.offers],
                "instance_type": [o.instance_type for o in self.offers],
                "region": [o.region for o in self.offers],
                "market": [o.market for o in self.offers],
                "price_per_hour": [o.price_per_hour for o in self.offers],
                "price_max_per_hour": [o.price_max_per_hour for o in self.offers],
                "price_min_per_hour": [o.price_min_per_hour for o in self.offers],
                "price_basis": [o.price_basis for o in self.offers],
                "interruption_bucket": [o.interruption_bucket for o in self.offers],
                "captured_at": [o.captured_at for o in self.offers],
                "flags": [o.flags for o in self.offers],
            }
        )
        offers["price_max_per_hour"] = offers["price_max_per_hour"].astype(float)
        offers["price_min_per_hour"] = offers["price_min_per_hour"].astype(float)
        # How much older each price is than the snapshot's newest: what makes a spot price drift.
        newest = dt.date.fromisoformat(self.captured_at[:10]) if self.captured_at else None
        offers["price_age_days"] = [
            float((newest - o.captured_at).days) if newest is not None else 0.0 for o in self.offers
        ]
        instances = self._instances_frame.drop(columns=["local_disk_gb", "excluded_reason"])
        frame = offers.merge(instances, on=["cloud", "instance_type"], how="left", validate="many_to_one")
        return none_for_missing(
            frame[list(OFFER_FRAME_COLUMNS)], ("interruption_bucket", "accelerator_name", "accelerator_key")
        )


def none_for_missing(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """Optional text columns hold None, not NaN, so ``value or default`` and ``is None`` work on rows."""
    for column in columns:
        frame[column] = pd.Series(
            [None if not isinstance(v, str) or v == "" else v for v in frame[column]],
            dtype=object,
            index=frame.index,
        )
    return frame
