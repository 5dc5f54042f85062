"""A fleet over a day is bought as a single deployment is: within its quotas, in a managed service's
market, ranked by carbon when asked; a quota row that binds nothing is refused."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar.catalog import load
from perdollar.catalog.quotas import Quota, check_known, instance_family, read_quotas
from perdollar.errors import PerdollarError
from perdollar.predict.llm_serving.fleet import IntervalReplay
from perdollar.price.fleet import Fleet, FleetOption, FleetPolicy, mixed_fleet, single_type_fleet
from perdollar.select.fleet import choose_fleet, repaired_by_replay

CURVE = "hour,requests_per_second\n0,4\n8,24\n20,10\n"
FLEET_QUESTION = (
    "recommend", "llama-3.1-8b", "--inference", "--input-tokens", "1500", "--output-tokens", "300",
    "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--cloud", "aws", "--no-store", "--json",
)  # fmt: skip
G6E_QUOTA = Quota("aws", "*", "g6e", 1)


def _option(instance_type: str, market: str, price: float, capacity: float, **extra: object) -> FleetOption:
    base: dict[str, object] = {
        "label": f"{instance_type} {market}", "instance_type": instance_type, "market": market,
        "price_per_hour": price, "replicas_per_instance": 1, "class_capacity": (capacity,), "scale_up_s": 0.0,
        "cloud": "aws", "region": "us-east-1", "gpus_per_instance": 1, "fallback_price_per_hour": price,
        "interruption_bucket": "<5%",
    }  # fmt: skip
    return FleetOption(**(base | extra))  # type: ignore[arg-type]


def _family_instances(fleet: Fleet, family: str) -> list[int]:
    inside = [instance_family("aws", o.instance_type) == family for o in fleet.options]
    return [sum(n for n, counted in zip(row, inside, strict=True) if counted) for row in fleet.instances]


def test_a_quota_holds_spot_and_on_demand_of_a_family_within_its_gpus_in_every_interval() -> None:
    # g6e is the cheapest per request, spot and on demand, but its quota holds one 1-GPU instance.
    options = [_option("g6e.xlarge", "spot", 0.5, 10.0), _option("g6e.xlarge", "on-demand", 1.0, 10.0),
               _option("g6.xlarge", "on-demand", 3.0, 10.0)]  # fmt: skip
    rates, durations = [(5.0,), (30.0,)], [3600.0, 3600.0]
    free = FleetPolicy(target_utilisation=1.0, min_replicas=1)
    bound = replace(free, quotas=(G6E_QUOTA,))
    unbound = mixed_fleet(options, rates, durations, free)
    assert unbound is not None and max(_family_instances(unbound, "g6e")) > 1  # the quota is what binds
    assert single_type_fleet(options[0], rates, durations, bound, static=False) is None
    choice = choose_fleet(options, rates, durations, bound)
    assert choice is not None
    for fleet in (choice.mixed, choice.autoscaled, choice.static_peak):
        assert max(_family_instances(fleet, "g6e")) <= 1
    assert _family_instances(choice.mixed, "g6e") == [1, 1]  # the cheap one is used up to its quota
    assert _family_instances(choice.mixed, "g6") == [0, 2]  # and the next machine takes the rest


def test_the_replay_adds_no_instance_beyond_a_quota() -> None:
    option = _option("g6e.xlarge", "on-demand", 1.0, 10.0)
    rates, durations = [(8.0,)], [600.0]
    missed = IntervalReplay(100, 5000.0, 10.0, False)
    for quotas, added in (((), (1,)), ((G6E_QUOTA,), (0,))):
        policy = FleetPolicy(target_utilisation=1.0, min_replicas=1, quotas=quotas)
        fleet = mixed_fleet([option], rates, durations, policy)
        assert fleet is not None and fleet.instances == ((1,),)
        repaired = repaired_by_replay(fleet, [missed], lambda plan, hours: dict.fromkeys(hours, missed),
                                      durations, policy, rounds=1)  # fmt: skip
        assert repaired.added_instances == added


def test_by_carbon_the_fleet_that_emits_least_is_chosen_and_ties_go_to_the_cheaper() -> None:
    dirty = _option("g6e.xlarge", "on-demand", 1.0, 10.0, co2e_g_per_hour=400.0)
    clean = _option("g6.xlarge", "on-demand", 2.0, 10.0, co2e_g_per_hour=100.0, region="eu-north-1")
    clean_dearer = replace(clean, price_per_hour=4.0, label="g6.xlarge dearer")
    rates, durations = [(5.0,), (15.0,)], [3600.0, 3600.0]
    policy = FleetPolicy(target_utilisation=1.0, min_replicas=1)
    by_cost = choose_fleet([dirty, clean, clean_dearer], rates, durations, policy)
    by_carbon = choose_fleet([dirty, clean, clean_dearer], rates, durations, replace(policy, by_carbon=True))
    assert by_cost is not None and by_carbon is not None
    assert {o.label for o in by_cost.mixed.options} == {dirty.label}
    assert {o.label for o in by_carbon.mixed.options} == {clean.label}
    assert {o.label for o in by_carbon.autoscaled.options} == {clean.label}


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("aws,*,g5g.xlarge,1", "'g5g.xlarge' is not an instance family of aws (the name before the size"),
        ("aws,*,g6x,1", "did you mean g6"),
        ("ec2,*,g6e,1", "cloud 'ec2' is not a cloud of the catalog — did you mean aws?"),
        ("azure,*,Standard_ND96isr_H100_v5,8", "did you mean NDv5?"),
    ],
)
def test_a_quota_row_that_binds_nothing_is_refused_with_what_was_meant(
    tmp_path: Path, row: str, words: str
) -> None:
    path = tmp_path / "quotas.csv"
    path.write_text(f"cloud,region,family,gpus\naws,*,p5,8\n{row}\n")
    with pytest.raises(PerdollarError) as caught:
        check_known(path, read_quotas(path), load().instances_frame())
    line = caught.value.one_line()
    assert line.startswith(f"quotas file {path}, row 3: ") and words in line
    machines = pd.DataFrame({"cloud": ["aws", "azure"], "instance_type": ["p5.48xlarge", "Standard_NC6"]})
    path.write_text("cloud,region,family,gpus\naws,us-*,p*,8\nazure,*,NC,0\n")  # patterns and families read
    check_known(path, read_quotas(path), machines)


def test_a_fleet_with_a_quota_row_that_binds_nothing_is_one_line(tmp_path: Path) -> None:
    curve, quotas = tmp_path / "day.csv", tmp_path / "quotas.csv"
    curve.write_text(CURVE)
    quotas.write_text("cloud,region,family,gpus\naws,*,g6e.xlarge,1\n")
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), "--quotas", str(quotas))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "row 2: 'g6e.xlarge' is not an instance family of aws" in lines[-1]
    assert "did you mean g6e?" in lines[-1]


def _instances(composition: str) -> dict[str, int]:
    """ "3× g6e.xlarge spot + 1× p5.48xlarge on-demand" → instances of each type."""
    counts: dict[str, int] = {}
    for number, name in re.findall(r"(\d+)× (\S+)", composition):
        counts[name] = counts.get(name, 0) + int(number)
    return counts


def test_a_fleet_keeps_each_family_within_its_quota_in_every_interval(tmp_path: Path) -> None:
    curve, quotas = tmp_path / "day.csv", tmp_path / "quotas.csv"
    curve.write_text(CURVE)
    quotas.write_text("cloud,region,family,gpus\naws,*,g6e,1\n")
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), "--quotas", str(quotas), columns=250)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    gpus = load().instances_frame().set_index("instance_type")["accelerator_count"]
    for interval in out["intervals"]:
        held = _instances(interval["fleet"])
        assert sum(held.values()) >= 1
        assert sum(n * gpus[name] for name, n in held.items() if instance_family("aws", name) == "g6e") <= 1
    assert any("quotas: in every interval" in note for note in out["notes"])


def test_a_quota_too_small_for_any_fleet_says_so(tmp_path: Path) -> None:
    curve, quotas = tmp_path / "day.csv", tmp_path / "quotas.csv"
    curve.write_text(CURVE)
    quotas.write_text("cloud,region,family,gpus\naws,*,*,0\n")
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), "--quotas", str(quotas))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1 and "Traceback" not in done.stderr
    assert f"the quotas of {quotas} are too small for the day" in lines[0] and "GPUs" in lines[0]


def test_a_fleet_in_a_managed_service_is_on_demand_at_its_prices(tmp_path: Path) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text(CURVE)
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), "--service", "sagemaker", columns=250)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert all(row["spot_instances"] == 0 and row["on_demand_instances"] >= 1 for row in out["intervals"])
    assert out["fleet"]["spot_share"] == 0
    assert any(note.startswith("priced as sagemaker bills") for note in out["notes"])


def test_a_fleet_by_carbon_says_so_and_gives_its_emissions(tmp_path: Path) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text(CURVE)
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), "--objective", "carbon", columns=250)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    emitted = [out[key]["co2e_kg_per_month"] for key in ("fleet", "autoscaled_single_type", "static_peak")]
    assert all(isinstance(kg, float) and math.isfinite(kg) and kg > 0 for kg in emitted)
    assert emitted[0] <= emitted[2] * 1.01  # the chosen fleet emits no more than the static peak
    assert any(note.startswith("ranked by emissions") for note in out["notes"])


def test_a_fleet_refuses_an_objective_it_cannot_rank_by(tmp_path: Path) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text(CURVE)
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), "--objective", "time")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1
    assert "--objective time ranks training runs" in lines[0] and "--objective carbon" in lines[0]


@pytest.mark.parametrize("flags", [("--horizon", "12"), ("--market", "committed-1y")])
def test_a_fleet_refuses_committed_terms_it_would_bill_by_the_hour(
    tmp_path: Path, flags: tuple[str, str]
) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text(CURVE)
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), *flags)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1
    assert "a committed term bills every hour of its term" in lines[0]
