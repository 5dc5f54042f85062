"""A language model's training question carries the whole bill: the dataset's copy, the kept
checkpoints, energy and carbon, and the data's region moves the ranking."""

from __future__ import annotations

import json

from cli_runner import run_perdollar

TRAIN = ("recommend", "llama-3.1-8b", "--tokens", "2e10", "--dataset-size", "20TB", "--json", "--no-store",
         "--top", "10")  # fmt: skip
BILL_FIELDS = ("egress_usd", "transfer_hours", "storage_usd", "energy_kwh", "carbon_kg", "grid_gco2e_per_kwh")


def _feasible(*extra: str) -> tuple[list[dict], list[str]]:
    done = run_perdollar(*TRAIN, *extra)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    return [e for e in answer["estimates"] if not e["excluded_reason"]], answer["notes"]


def test_the_bill_is_priced_and_the_data_region_moves_the_ranking() -> None:
    east, notes = _feasible("--data-region", "us-east-1")
    europe, _ = _feasible("--data-region", "gcp:europe-west4")
    assert any("20 TB (decimal) in aws us-east-1" in note for note in notes)
    for estimate in east:
        assert all(field in estimate for field in BILL_FIELDS)
        # Two checkpoints of 14 bytes per parameter are kept while the run lasts.
        assert estimate["storage_usd"] > 0
        moved = (estimate["cloud"], estimate["region"]) != ("aws", "us-east-1")
        assert (estimate["egress_usd"] > 0) == moved
        assert (estimate["transfer_hours"] > 0) == moved
    assert (east[0]["cloud"], east[0]["region"]) != (europe[0]["cloud"], europe[0]["region"])
    with_energy = [e for e in east + europe if e["energy_kwh"] is not None]
    assert with_energy and all(e["energy_kwh"] > 0 for e in with_energy)
