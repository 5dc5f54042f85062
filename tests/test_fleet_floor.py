"""A fleet's on-demand floor: the load it needs survives spot reclaims at the availability target."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.price.fleet import FleetOption, FleetPolicy, single_type_fleet
from perdollar.price.fleet_floor import (
    fleet_survival,
    floor_counts,
    kept_probability,
    reclaim_probability,
    with_on_demand_floor,
)
from perdollar.price.spot import HOURS_PER_MONTH
from perdollar.select.fleet import choose_fleet


def _spot(capacity: float = 1.0, bucket: str = ">20%") -> FleetOption:
    return FleetOption(
        label="g spot (aws us-east-1) tp1+fp8", instance_type="g", market="spot", price_per_hour=1.0,
        replicas_per_instance=1, class_capacity=(capacity,), scale_up_s=0.0, interruption_bucket=bucket,
        fallback_price_per_hour=3.0, cloud="aws", region="us-east-1",
    )  # fmt: skip


def test_reclaims_are_independent_at_the_pools_monthly_rate() -> None:
    hazard = -math.log(1 - 0.30) / HOURS_PER_MONTH  # the middle of >20%, per hour
    p = reclaim_probability(_spot(), 3600.0)
    assert p == pytest.approx(1 - math.exp(-hazard))
    # Three instances, one spare: all kept unless two or three are reclaimed.
    assert kept_probability(3, 1, p) == pytest.approx((1 - p) ** 3 + 3 * p * (1 - p) ** 2)
    assert kept_probability(3, 3, p) == 1.0 and kept_probability(3, -1, p) == 0.0


def test_a_lone_spot_replica_runs_on_demand_at_high_availability_and_stays_spot_at_low() -> None:
    p = reclaim_probability(_spot(), 3600.0)
    assert floor_counts(1, 0, 1, p, 0.999, (1.0, 3.0)) == (0, 1)  # on demand: cheaper than a twin
    assert floor_counts(1, 0, 1, p, 0.9, (1.0, 3.0)) == (1, 0)
    # Ten needed on ten spot instances: one on-demand twin gives room for a reclaim at 99 %; at
    # 99.9999 % a second is needed, as two of ten reclaimed in an hour is likelier than 1e-6.
    assert floor_counts(10, 0, 10, p, 0.99, (1.0, 3.0)) == (10, 1)
    assert kept_probability(10, 1, p) < 0.999999 <= kept_probability(10, 2, p)
    assert floor_counts(10, 0, 10, p, 0.999999, (1.0, 3.0)) == (10, 2)


def test_the_floor_adds_an_on_demand_twin_of_the_same_machine_and_routes_it_a_share() -> None:
    option = _spot(capacity=2.0)
    rates, durations = [(0.5,), (7.0,)], [3600.0, 3600.0]
    policy = FleetPolicy(target_utilisation=1.0, min_replicas=1, availability=0.999)
    fleet = single_type_fleet(option, rates, durations, policy, static=False)
    assert fleet is not None and fleet.instances == ((1,), (4,))  # 3.5 replicas' load on 4: no room
    floored = with_on_demand_floor(fleet, durations, policy)
    markets = [o.market for o in floored.options]
    assert markets == ["spot", "on-demand"] and floored.options[1].price_per_hour == 3.0
    assert floored.options[1].instance_type == "g" and floored.options[1].region == "us-east-1"
    assert floored.instances == ((0, 1), (4, 1))  # night on demand; by day a twin is the room
    assert floored.routed[0] == ((0.0,), (0.5,))
    assert floored.routed[1][0][0] == pytest.approx(7.0 * 4 / 5)
    assert sum(rates[0] for rates in floored.routed[1]) == pytest.approx(7.0)
    assert floored.cost > fleet.cost
    survival = fleet_survival(floored, durations)
    assert [s.after_one_reclaim for s in survival] == [1, 4]
    assert [s.needed_replicas for s in survival] == [1, 4]
    p = reclaim_probability(option, 3600)
    assert survival[0].kept_probability == 1.0
    assert survival[1].kept_probability == pytest.approx(kept_probability(4, 1, p))


def test_a_low_availability_fleet_may_be_all_spot() -> None:
    option = _spot(capacity=2.0)
    rates, durations = [(0.5,), (7.0,)], [3600.0, 3600.0]
    relaxed = choose_fleet([option], rates, durations, FleetPolicy(1.0, 1, availability=0.9))
    strict = choose_fleet([option], rates, durations, FleetPolicy(1.0, 1, availability=0.999))
    assert relaxed is not None and strict is not None
    assert all(o.is_spot for o in relaxed.mixed.options) and relaxed.mixed.instances == ((1,), (4,))
    assert any(not o.is_spot for o in strict.mixed.options)
    assert strict.mixed.instances_on(0, spot=False) >= 1


FLEET = (
    "recommend", "llama-3.1-8b", "--inference", "--ttft-p99-ms", "800", "--tpot-p99-ms", "50",
    "--cloud", "aws", "--no-store", "--json",
)  # fmt: skip


def _fleet(curve: Path, *extra: str) -> dict:
    done = run_perdollar(*FLEET, "--load-curve", str(curve), *extra, columns=250)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_fleet_at_three_nines_keeps_an_on_demand_floor_by_night_and_a_loose_one_may_not(
    tmp_path: Path,
) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_second\n0,0.3\n8,20\n20,6\n")
    strict = _fleet(curve, "--availability", "0.999")
    night = strict["intervals"][0]
    assert night["replicas"] == 1 and night["on_demand_instances"] >= 1 and night["spot_instances"] == 0
    note = next(n for n in strict["notes"] if n.startswith("on-demand floor"))
    assert "00:00 1 of 1 needed (1 on demand)" in note and "99.90%" in note
    loose = _fleet(curve, "--availability", "0.5")
    assert all(row["on_demand_instances"] == 0 for row in loose["intervals"])
    assert loose["fleet"]["spot_share"] == 1.0 > strict["fleet"]["spot_share"]


def test_a_fleet_near_its_users_runs_only_in_regions_near_them(tmp_path: Path) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_second\n0,2\n12,12\n")
    anywhere = _fleet(curve)
    near = _fleet(curve, "--near", "us-east-1")
    regions = {part.split("(aws ")[1].split(")")[0] for part in near["fleet"]["parts"]}
    assert regions <= {"us-east-1", "us-east-2", "ca-central-1"}
    assert any("(aws us-east" not in part and "(aws ca-" not in part for part in anywhere["fleet"]["parts"])
    assert any(n.startswith("near aws us-east-1") for n in near["notes"])
