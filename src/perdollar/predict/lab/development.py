"""The development set as the fit and the accuracy benchmarks read it: specs, aliases, rows and pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perdollar.catalog.model import Accelerator
from perdollar.predict.lab.evaluation import Cases, build_cases, pair_indices
from perdollar.predict.lab.spec_table import read_accelerator_specs, read_aliases
from perdollar.predict.published import normalise, read_published_csv


@dataclass(frozen=True)
class DevelopmentSet:
    """published_dev.csv as the fit and the accuracy benchmarks read it."""

    csv_path: Path
    accelerators: dict[str, Accelerator]
    aliases: dict[str, str]
    cases: Cases
    pairs: pd.DataFrame


def load_development_set(data_dir: Path) -> DevelopmentSet:
    """Read the shared data folder's accelerator table, GPU aliases and development set."""
    from perdollar.predict.references import published_profile_provider

    for needed in ("accelerator_specs.csv", "measurements/published_dev.csv"):
        if not (data_dir / needed).is_file():
            raise FileNotFoundError(f"{data_dir / needed} not found: data_dir must be the shared data folder")
    csv_path = data_dir / "measurements" / "published_dev.csv"
    accelerators = read_accelerator_specs(data_dir)
    aliases = read_aliases(data_dir)
    rows = normalise(read_published_csv(csv_path), aliases.get)
    cases = build_cases(rows, accelerators, published_profile_provider())
    return DevelopmentSet(csv_path, accelerators, aliases, cases, pair_indices(cases))


def fitted_sources(rows: pd.DataFrame) -> dict[str, list[str]]:
    """The accelerators whose rows of each source the fit saw (source id → sorted keys)."""
    known = rows.dropna(subset=["accelerator_key"])
    return {
        str(source): sorted(set(group["accelerator_key"]))
        for source, group in known.groupby("source_id", sort=True)
    }
