"""Every published serving row names a model and a GPU perdollar knows, its source and its date:
the loader skips a row it cannot resolve, so a misspelt name would drop a figure silently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving.engine_cases import load_published_rows

ROWS = Path(__file__).resolve().parents[1] / "benchmarks" / "published_llm_serving_engines.csv"


def test_every_published_serving_row_resolves_to_a_case() -> None:
    frame = pd.read_csv(ROWS)
    cases = load_published_rows(ROWS, catalog_mod.load())
    loaded = {(case.source, case.gpu, case.model, case.batch, case.input_tokens) for case in cases}
    missing = [
        (row.source_url, row.gpu, row.model)
        for row in frame.itertuples(index=False)
        if not any(key[0] == row.source_url and key[1] == row.gpu and key[2] == row.model for key in loaded)
    ]
    assert not missing
    assert len(cases) == len(frame)


def test_every_published_serving_row_names_its_source_and_date() -> None:
    frame = pd.read_csv(ROWS)
    assert frame["source_url"].str.startswith("https://").all()
    assert frame["source_date"].notna().all()
    assert (frame["value"] > 0).all()


def test_rocm_serving_check_reads_every_rocm_row_of_every_engine() -> None:
    """Every ROCm row of every engine (TGI, with no CUDA row, included) and every source gets a share."""
    frame = pd.read_csv(ROWS)
    catalog = catalog_mod.load()
    rocm = frame[[catalog.accelerator(gpu).software_stack == "rocm" for gpu in frame["gpu"]]]
    script = ROWS.parent / "rocm_serving_check.py"
    env = {**os.environ, "PYTHONPATH": str(ROWS.parents[1] / "src")}
    done = subprocess.run([sys.executable, str(script), str(ROWS)], capture_output=True, text=True, env=env,
                          cwd=ROWS.parent, check=True)  # fmt: skip
    assert f"of the {len(rocm)} ROCm rows" in done.stdout
    assert set(rocm["engine"]) >= {"tgi"}
    for source in set(rocm["source_url"]):
        assert f"{source}: " in done.stdout
