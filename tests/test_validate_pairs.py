"""`validate`: the pairing rules on a small hand-made CSV, and the command end to end."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.errors import PerdollarError
from perdollar.predict.lab.fit import pair_weights
from perdollar.predict.lab.validate import run_validation
from perdollar.predict.published import form_pairs, normalise, read_published_csv

HEADER = [
    "source",
    "model",
    "task",
    "gpu",
    "gpu_count",
    "precision",
    "batch_size",
    "batch_scope",
    "seq_len",
    "throughput",
    "unit",
    "metric",
    "throughput_scope",
    "framework",
    "system",
    "flag",
    "notes",
    "file",
]
GLOBAL, TOTAL = "global (summed over GPUs)", "total over all GPUs in system"


def row(
    rid,
    gpu,
    *,
    source="bench A",
    model="Foo net",
    notes="PyTorch=1.13.0a0",
    count=1,
    batch=64,
    thr=100.0,
    metric="throughput",
    unit="images/s",
    scope=TOTAL,
    bscope=GLOBAL,
    precision="fp32",
    flag="",
):
    return {
        "source": source,
        "model": model,
        "task": "train",
        "gpu": gpu,
        "gpu_count": count,
        "precision": precision,
        "batch_size": batch,
        "batch_scope": bscope,
        "seq_len": "",
        "throughput": thr,
        "unit": unit,
        "metric": metric,
        "throughput_scope": scope,
        "framework": "PyTorch",
        "system": rid,
        "flag": flag,
        "notes": notes,
        "file": "hand.csv",
    }


@pytest.fixture()
def hand_csv(tmp_path: Path) -> Path:
    rows = [
        row("r1", "T4", thr=100.0),
        row("r2", "V100-SXM2-16GB", thr=300.0),
        row("r3", "A100-SXM4-80GB", thr=900.0, notes="PyTorch=2.1.0"),  # other software era
        row("r4", "A10", thr=200.0, source="bench B"),  # other source
        row("r5", "RTX 3090", count=2, batch=128, thr=300.0),  # multi-GPU system total
        row(
            "r6",
            "RTX A6000",
            thr=100.0,
            metric="latency",
            unit="ms per iteration (latency)",
            scope="wall time of one iteration",
            bscope="per_gpu",
            batch=8,
        ),
        row("r7", "L4", thr=120.0, batch=32),  # other per-GPU batch
        row("r8", "A10", thr=5.0, flag="anomalous: far below the same GPU's other rows in source table"),
        row("r9", "L4", thr=150.0, flag="A100 variant not stated"),  # a caveat, not a doubt
        row("r10", "A10", thr="n/a"),  # no figure to pair
    ]
    path = tmp_path / "hand.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=HEADER)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_pairs_need_same_source_era_batch_and_different_gpu(hand_csv: Path):
    rows = normalise(read_published_csv(hand_csv), lambda name: name)
    pairs = form_pairs(rows)
    assert sorted(zip(pairs.gpu_anchor, pairs.gpu_target, strict=True)) == [
        ("L4", "T4"),
        ("L4", "V100-SXM2-16GB"),
        ("T4", "L4"),
        ("T4", "V100-SXM2-16GB"),
        ("V100-SXM2-16GB", "L4"),
        ("V100-SXM2-16GB", "T4"),
    ]
    only_t4 = form_pairs(rows, {"T4"})
    assert sorted(only_t4.gpu_anchor) == ["L4", "V100-SXM2-16GB"] and set(only_t4.gpu_target) == {"T4"}


def test_a_row_its_source_flags_as_implausible_is_neither_anchor_nor_target(hand_csv: Path):
    rows = normalise(read_published_csv(hand_csv), lambda name: name).set_index("system")
    assert not rows.loc["r8", "usable"] and rows.loc["r9", "usable"]
    assert "A10" not in set(form_pairs(rows.reset_index())["gpu_anchor"])


def test_totals_and_global_batches_are_divided_by_gpu_count_and_latency_inverted(hand_csv: Path):
    rows = normalise(read_published_csv(hand_csv), lambda name: name).set_index("system")
    assert rows.loc["r5", "per_gpu_batch"] == 64 and rows.loc["r5", "per_gpu_throughput"] == 150
    assert not rows.loc["r5", "usable"]  # multi-GPU rows are not paired
    assert rows.loc["r6", "per_gpu_throughput"] == pytest.approx(8 / 0.1)
    assert rows.loc["r1", "era"] != rows.loc["r3", "era"]


def test_validation_on_hand_csv_counts_fallback_rows_separately(hand_csv: Path):
    result = run_validation(hand_csv, catalog_mod.load(), ["T4"], refit=False)
    assert result["pairs"] == 2
    assert result["calibrated"]["n"] == 0  # "Foo net" has no reference workload
    assert result["fallback"]["calibrated"]["n"] == 2
    assert result["left_out"]["multi_gpu_rows"] == 1
    assert result["left_out"]["rows_flagged_implausible_by_source"] == 1
    assert result["left_out"]["rows_without_a_positive_throughput"] == 1
    assert result["coverage"] == {"fraction": 1.0, "predicted_rows": 1, "candidate_rows": 1}
    assert set(result["per_gpu"]) == {"T4"}
    ape = result["fallback"]["calibrated"]["median_ape"]
    assert 0 <= ape < 1.0  # T4 predicted slower than V100, not wildly off the published third


def test_perdollars_own_rows_are_predicted_with_their_reference_workload(tmp_path: Path):
    # benchmarks/gpu_references.py writes the reference's name and the workload's precision
    own = dict(source="perdollar gpu_references", bscope="per GPU", scope="per GPU", notes="")
    rows = [
        row("h100", "H100-SXM5-80GB", model="resnet50", precision="amp-fp16", batch=256, thr=2685.0, **own),
        row("h200", "H200-SXM-141GB", model="resnet50", precision="amp-fp16", batch=256, thr=2976.0, **own),
    ]
    path = tmp_path / "own.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=HEADER)
        writer.writeheader()
        writer.writerows(rows)
    result = run_validation(path, catalog_mod.load(), ["H200-SXM-141GB"], refit=False)
    assert result["calibrated"]["n"] == 1 and result["spec_only"]["n"] == 1
    assert result["fallback"]["calibrated"]["n"] == 0
    assert result["calibrated"]["median_ape"] < 0.25


def test_bad_file_is_a_one_line_error(tmp_path: Path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(PerdollarError, match="lacks the column"):
        read_published_csv(bad)
    done = run_perdollar("validate", str(bad))
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_target_gpu_absent_from_the_file_is_a_one_line_error(hand_csv: Path):
    with pytest.raises(PerdollarError, match=r"no row of .* has gpu 'Tesla T9'"):
        run_validation(hand_csv, catalog_mod.load(), ["Tesla T9"], refit=False)


@pytest.mark.slow
def test_validate_published_dev_beats_the_naive_baselines(shared_data: Path):
    csv_path = shared_data / "measurements" / "published_dev.csv"
    done = run_perdollar("validate", str(csv_path), "--target-gpus", "T4,V100-SXM2-16GB", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    for block in (result["calibrated"], result["spec_only"], result["fallback"]["calibrated"]):
        assert set(block) == {"n", "median_ape", "mean_ape", "within_10pct", "within_25pct"}
    assert set(result["per_gpu"]) <= {"T4", "V100-SXM2-16GB"}
    assert result["coverage"]["fraction"] > 0.8
    everything = result["calibrated_all"]["median_ape"]
    assert everything < result["baselines"]["bandwidth_ratio"]["median_ape"]
    assert everything < result["baselines"]["geometric_mean"]["median_ape"]


@pytest.fixture()
def seen_csv(hand_csv: Path, tmp_path: Path) -> Path:
    """The hand-made rows, as if from a source whose T4 and V100 rows the shipped fit saw."""
    from perdollar.predict.params import shipped_model

    fitted = shipped_model().provenance["fitted_sources"]
    source = next(s for s, keys in fitted.items() if {"T4", "V100-SXM2-16GB"} <= set(keys))
    frame = pd.read_csv(hand_csv, dtype=str, keep_default_na=False)
    frame.loc[frame["source"] == "bench A", "source"] = source
    path = tmp_path / "seen.csv"
    frame.to_csv(path, index=False)
    return path


def test_held_out_figures_refit_only_where_the_shipped_fit_saw_the_target_rows(
    hand_csv: Path, seen_csv: Path
):
    # New measurements: the shipped parameters never saw them, so they predict them as they are
    # (a refit on a small file would be the weaker model).
    new = run_validation(hand_csv, catalog_mod.load(), ["T4"], refit=True)
    assert new["fit"].startswith("shipped parameters, as they are (held out")
    unseen_gpu = run_validation(hand_csv, catalog_mod.load(), ["L4"], refit=True)
    assert unseen_gpu["fit"].startswith("shipped parameters, as they are")
    assert unseen_gpu["fallback"]["calibrated"]["n"] == 2  # L4 predicted from T4 and from V100
    # Rows of a (source, GPU) the shipped fit saw: refitted without them, from the defaults.
    seen = run_validation(seen_csv, catalog_mod.load(), ["T4"], refit=True)
    assert seen["fit"].startswith("refitted on this file without the target GPUs")
    assert "saw rows of T4" in seen["fit"] and "start and prior: defaults" in seen["fit"]
    not_held_out = run_validation(seen_csv, catalog_mod.load(), ["T4"], refit=False)
    assert "may have seen the target rows" in not_held_out["fit"]


def test_a_held_out_refit_owes_nothing_to_parameters_that_saw_the_target(
    seen_csv: Path, monkeypatch: pytest.MonkeyPatch
):
    """Not even its starting point: the fit is not convex, and a start that saw the target flatters it."""
    import dataclasses

    from perdollar.predict.lab import validate as validate_mod
    from perdollar.predict.params import shipped_model

    real = shipped_model()
    skewed = dataclasses.replace(
        real, params=real.params.with_values({"tensor_core_efficiency": 0.3, "step_overhead_s": 4e-3})
    )
    first = run_validation(seen_csv, catalog_mod.load(), ["T4"], refit=True)
    monkeypatch.setattr(validate_mod, "shipped_model", lambda: skewed)
    second = run_validation(seen_csv, catalog_mod.load(), ["T4"], refit=True)
    assert first["calibrated_all"]["n"] > 0
    assert second["calibrated_all"] == first["calibrated_all"]
    assert second["per_gpu"] == first["per_gpu"]


def test_every_row_weighs_the_same_in_the_fit_whatever_its_tables_gpu_count():
    def table(key: str, gpus: list[str], first_case: int) -> pd.DataFrame:
        cases = dict(zip(gpus, range(first_case, first_case + len(gpus)), strict=True))
        return pd.DataFrame(
            [
                {
                    "pair_key": key,
                    "gpu_anchor": a,
                    "gpu_target": t,
                    "case_anchor": cases[a],
                    "case_target": cases[t],
                }
                for a in gpus
                for t in gpus
                if a != t
            ]
        )

    pairs = pd.concat(
        [table("small", ["A", "B", "C"], 0), table("large", list("DEFGHIJKLMNO"), 3)], ignore_index=True
    )
    weight = pair_weights(pairs)
    # Each row's squared weight over the pairs it is in, as anchor or target, is the same for every row.
    per_row = np.zeros(15)
    np.add.at(per_row, pairs["case_anchor"].to_numpy(), weight**2)
    np.add.at(per_row, pairs["case_target"].to_numpy(), weight**2)
    assert np.allclose(per_row, per_row[0])
    assert np.mean(weight**2) == pytest.approx(1.0)
    assert pair_weights(pairs.iloc[:0]).size == 0


def test_leave_one_collection_out_fits_without_every_row_of_the_targets_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from perdollar.predict.lab import fit as fit_mod
    from perdollar.predict.lab.evaluation import build_cases, pair_indices
    from perdollar.predict.references import published_profile_provider

    rows = [
        row("a1", "T4", thr=100.0) | {"file": "one.csv"},
        row("a2", "V100-SXM2-16GB", thr=300.0) | {"file": "one.csv"},
        row("b1", "T4", thr=50.0, source="bench B") | {"file": "two.csv"},
        row("b2", "A10", thr=120.0, source="bench B") | {"file": "two.csv"},
    ]
    path = tmp_path / "two_collections.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=HEADER)
        writer.writeheader()
        writer.writerows(rows)
    cat = catalog_mod.load()
    normalised = normalise(read_published_csv(path), lambda name: cat.accelerator(name).key)
    cases = build_cases(normalised, dict(cat.accelerators), published_profile_provider())
    pairs = pair_indices(cases)
    unseen: list[set[str]] = []

    def recording_fit(cases, pairs, start, *, exclude_rows=None, **_):
        unseen.append(set(cases.rows["file"][exclude_rows]))
        assert set(cases.rows["file"][~exclude_rows]).isdisjoint(unseen[-1])
        return fit_mod.FitResult.shipped()

    monkeypatch.setattr(fit_mod, "fit_model", recording_fit)
    held = fit_mod.leave_one_collection_out(cases, pairs)
    assert unseen == [{"one.csv"}, {"two.csv"}]
    files = cases.rows["file"].to_numpy()
    assert (held["collection"].to_numpy() == files[held["case_target"].to_numpy()]).all()
    assert len(held) == len(pairs) == 4
