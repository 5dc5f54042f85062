"""Blank cells of the data folder's accelerator table that the package fills, each with its source.

A fill never replaces a value the folder states. Both readers of that table (the catalog build and
the fit's spec reader) apply the same fills, so the fit and the predictions see the same chip.
Without one, a chip the folder lists without, say, a memory bandwidth would be read as having none.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

SPEC_FILLS = Path(__file__).with_name("accelerator_spec_fills.csv")


def with_spec_fills(specs: pd.DataFrame) -> pd.DataFrame:
    """``specs`` (the folder's ``accelerator_specs.csv``) with the package's fills applied."""
    specs = specs.copy()
    for fill in pd.read_csv(SPEC_FILLS).itertuples(index=False):
        if fill.column not in specs.columns:
            raise ValueError(f"{SPEC_FILLS.name}: no column {fill.column!r} in accelerator_specs.csv")
        blank = (specs["accelerator_key"] == fill.accelerator_key) & specs[fill.column].isna()
        specs.loc[blank, fill.column] = float(fill.value)
        note = f"; {fill.column}: {fill.source}"
        specs.loc[blank, "source"] = specs.loc[blank, "source"].astype(str) + note
    return specs
