"""A fleet over a day: load curves and traces, spot waves, autoscaling delay, the integer program, replay."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from cli_runner import run_perdollar
from llm_stream_server import streaming_server
from perdollar.errors import PerdollarError
from perdollar.predict.llm_serving.fleet import (
    DEFAULT_DISK_BYTES_PER_S,
    Pool,
    ReplicaService,
    poisson_arrivals,
    replay_interval,
    scale_up_seconds,
)
from perdollar.price.fleet import FleetOption, FleetPolicy, mixed_fleet, single_type_fleet, spot_terms
from perdollar.price.spot import HOURS_PER_MONTH
from perdollar.workload.llm.load_curve import RequestClass, parse_load_curve, parse_trace

ALL = RequestClass("all", 1000, 200)


def _option(name: str, price: float, capacity: tuple[float, ...], **extra: object) -> FleetOption:
    base: dict[str, object] = {
        "label": name, "instance_type": name, "market": "on-demand", "price_per_hour": price,
        "replicas_per_instance": 1, "class_capacity": capacity, "scale_up_s": 0.0,
    }  # fmt: skip
    return FleetOption(**(base | extra))  # type: ignore[arg-type]


# --- Load curves and traces -------------------------------------------------------------------


def test_a_three_row_curve_is_a_three_step_day() -> None:
    curve = parse_load_curve("hour,requests_per_second\n0,5\n8,20\n18,10\n", ALL)
    assert [i.duration_s / 3600 for i in curve.intervals] == [8, 10, 6]
    assert [i.requests_per_second for i in curve.intervals] == [5, 20, 10]
    assert curve.peak_rps == 20 and curve.span_s == 86_400


def test_iso_timestamps_are_averaged_by_hour_of_day() -> None:
    text = "hour,requests_per_second\n2026-01-01T03:00:00,4\n2026-01-02T03:00:00,8\n2026-01-01T10:00,1\n"
    curve = parse_load_curve(text, ALL)
    assert [(i.start_s / 3600, i.requests_per_second) for i in curve.intervals] == [(3, 6), (10, 1)]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("hour,requests_per_second\n", "and no rows"),
        ("time,rps\n0,5\n", "lacks hour"),
        ("hour,requests_per_second\n24,5\n", "whole hour from 0 to 23"),
        ("hour,requests_per_second\nnoon,5\n", "neither 0-23 nor an ISO timestamp"),
        ("hour,requests_per_second\n1,lots\n", "is not a number"),
        ("hour,requests_per_second\n1,-3\n", "≥ 0"),
        ("hour,requests_per_second\n1,0\n2,0\n", "every requests_per_second is 0"),
    ],
)
def test_a_bad_load_curve_says_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(PerdollarError) as caught:
        parse_load_curve(text, ALL)
    assert words in caught.value.problem and caught.value.fix


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("arrival_s,input_tokens,output_tokens\n0,10,5\n", "at least two"),
        ("arrival_s,input_tokens,output_tokens\n5,10,5\n1,10,5\n", "goes backwards"),
        ("arrival_s,input_tokens\n0,10\n1,10\n", "has no output_tokens"),
        ("arrival_s,input_tokens,output_tokens\n0,10,0\n1,10,5\n", "output_tokens ≥ 1"),
        ('{"arrival_s": 0}\n[1]\n', "not a JSON object"),
    ],
)
def test_a_bad_trace_says_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(PerdollarError) as caught:
        parse_trace(text)
    assert words in caught.value.problem


def test_a_trace_splits_short_and_long_requests_and_cuts_hours() -> None:
    rows = [{"arrival_s": t * 30.0, "input_tokens": 4000 if t % 4 == 0 else 100, "output_tokens": 50}
            for t in range(240)]  # fmt: skip
    curve = parse_trace("\n".join(json.dumps(r) for r in rows))
    assert [c.name for c in curve.classes] == ["short", "long"]
    assert curve.classes[1].input_tokens == 4000 and curve.classes[0].input_tokens == 100
    assert len(curve.intervals) == 2 and len(curve.requests) == 240
    assert curve.intervals[0].shares == pytest.approx((0.75, 0.25))
    assert curve.intervals[0].requests_per_second == pytest.approx(120 / 3600)


# --- Spot waves and the scale-up delay ------------------------------------------------------------


def test_a_spot_wave_is_discounted_only_beyond_the_availability_target() -> None:
    option = _option("g", 1.0, (1.0,), market="spot", interruption_bucket="<5%", fallback_price_per_hour=3.0)
    hazard = -math.log(1 - 0.025) / HOURS_PER_MONTH  # the bucket's middle, per hour
    wave = 1 - math.exp(-hazard / 0.05)  # waves of 5% of the pool, one hour
    relaxed = spot_terms(option, 3600, availability=0.999)
    strict = spot_terms(option, 3600, availability=0.9999)
    assert relaxed.wave_probability == pytest.approx(wave) and wave < 1e-3
    assert relaxed.capacity_share == 1.0 and strict.capacity_share == pytest.approx(0.95)
    assert relaxed.price_per_hour == pytest.approx(1.0 + hazard * 0.5 * 3.0)


def test_scale_up_is_start_plus_weights_over_the_slower_of_disk_and_network() -> None:
    assert scale_up_seconds(16e9, 4.0, instance_start_s=120) == pytest.approx(120 + 16e9 / 0.5e9)
    assert scale_up_seconds(16e9, 100.0, instance_start_s=120) == pytest.approx(
        120 + 16e9 / DEFAULT_DISK_BYTES_PER_S
    )


def test_scale_ups_are_billed_from_one_delay_ahead() -> None:
    option = _option("g", 10.0, (2.0,), scale_up_s=360.0)
    fleet = single_type_fleet(option, [(1.0,), (5.0,)], [3600.0, 3600.0], FleetPolicy(1.0, 1), static=False)
    assert fleet is not None and fleet.instances == ((1,), (3,))
    # Two instances started 6 minutes early for the busy hour; the day wraps round with no rise.
    assert fleet.cost_per_interval == pytest.approx((10.0, 30.0 + 2 * 10.0 * 0.1))
    static = single_type_fleet(option, [(1.0,), (5.0,)], [3600.0, 3600.0], FleetPolicy(1.0, 1), static=True)
    assert static is not None and static.instances == ((3,), (3,))


def test_the_static_peak_keeps_the_autoscalers_headroom_at_its_busiest_hour() -> None:
    # 7 requests/s at the peak on replicas taking 2 each: 4 replicas at full capacity, 5 at 80 %.
    option = _option("g", 1.0, (2.0,))
    rates, durations = [(1.0,), (7.0,)], [3600.0, 3600.0]
    policy = FleetPolicy(target_utilisation=0.8, min_replicas=1)
    static = single_type_fleet(option, rates, durations, policy, static=True)
    scaled = single_type_fleet(option, rates, durations, policy, static=False)
    assert static is not None and scaled is not None
    assert scaled.instances == ((1,), (5,))
    assert static.instances == ((5,), (5,))  # the autoscaled fleet's busiest hour, held all day


# --- The integer program against brute force -------------------------------------------------------


def _routable(
    options: list[FleetOption], counts: tuple[int, ...], rates: tuple[float, ...], util: float
) -> bool:
    """Whether the class rates fit the counts: a linear feasibility problem."""
    kinds, classes = len(options), len(rates)
    equality = np.zeros((classes, kinds * classes))
    upper = np.zeros((kinds, kinds * classes))
    bounds = []
    for k, option in enumerate(options):
        for c in range(classes):
            equality[c, k * classes + c] = 1
            capacity = option.class_capacity[c]
            upper[k, k * classes + c] = 1 / capacity if capacity > 0 else 0
            bounds.append((0, None if capacity > 0 else 0))
    result = linprog(np.zeros(kinds * classes), A_ub=upper, b_ub=np.array(counts) * util, A_eq=equality,
                     b_eq=rates, bounds=bounds)  # fmt: skip
    return bool(result.status == 0)


def test_the_integer_program_finds_the_brute_force_optimum() -> None:
    # A cheap machine good at short requests only, a dear one good at both: the mix beats either.
    options = [
        _option("short-box", 1.0, (4.0, 0.0), scale_up_s=900.0),
        _option("big-box", 3.0, (6.0, 2.0), scale_up_s=900.0),
        _option("mid-box", 2.2, (3.0, 1.2), scale_up_s=900.0),
    ]
    rates = [(9.0, 1.5), (2.0, 0.5)]
    durations = [3600.0, 3600.0]
    policy = FleetPolicy(target_utilisation=0.9, min_replicas=1)
    fleet = mixed_fleet(options, rates, durations, policy)
    assert fleet is not None
    per_interval = [
        {
            counts: _routable(options, counts, rates[h], 0.9)
            for counts in itertools.product(range(5), repeat=3)
        }
        for h in range(2)
    ]
    best = math.inf
    for first, second in itertools.product(per_interval[0], per_interval[1]):
        if not (per_interval[0][first] and per_interval[1][second]) or sum(first) < 1 or sum(second) < 1:
            continue
        cost = 0.0
        for now, before in ((first, second), (second, first)):
            for k, option in enumerate(options):
                cost += (
                    now[k] * option.price_per_hour + max(0, now[k] - before[k]) * option.price_per_hour * 0.25
                )
        best = min(best, cost)
    assert fleet.cost == pytest.approx(best, rel=0.005)
    assert len(fleet.options) >= 2  # the optimum mixes machines


# --- Replay ----------------------------------------------------------------------------------------


def _flat_service(prefill_s: float, token_s: float, tokens: int, batch: int = 64) -> ReplicaService:
    return ReplicaService((prefill_s,), (tokens,), ((token_s,) * batch,))


def test_replay_misses_the_slo_only_when_the_pool_is_overloaded() -> None:
    service = _flat_service(0.15, 0.02, 50)
    arrivals, classes = poisson_arrivals([8.0], 600.0, max_requests=3000, seed=1)
    slo = {"ttft_p99_ms": 1000.0, "tpot_p99_ms": 80.0}
    # A replica prefills 6.7 prompts/s: two take 8/s with room, one falls further behind each second.
    calm = replay_interval(arrivals, classes, [Pool(service, 2, (8.0,))], **slo)
    swamped = replay_interval(arrivals, classes, [Pool(service, 1, (8.0,))], **slo)
    assert calm.meets_slo and 170 <= calm.ttft_p99_ms < 1000
    assert not swamped.meets_slo and swamped.ttft_p99_ms > calm.ttft_p99_ms


FIRST_S, TOKEN_S, TOKENS, RATE = 0.05, 0.01, 20, 4.0


def test_replay_matches_serve_bench_against_the_local_server() -> None:
    """The local server answers every request on its own (no batching): a pool of as many replicas
    as could be in flight, each with a prefill of the first-token delay less one token's."""
    with streaming_server(FIRST_S, TOKEN_S, max_seconds=90) as url:
        done = run_perdollar(
            "serve-bench", "--url", url, "--model", "Tiny-LM", "--rates", str(RATE), "--max-requests", "12",
            "--step-seconds", "3", "--output-tokens", str(TOKENS), "--stall-seconds", "1",
            "--accelerator", "L4", "--json", "--no-store", timeout=120, columns=250,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)["steps"][0]
    service = _flat_service(FIRST_S - TOKEN_S, TOKEN_S, TOKENS)
    arrivals, classes = poisson_arrivals([RATE], 600.0, seed=3)
    replay = replay_interval(
        arrivals, classes, [Pool(service, 64, (RATE,))], ttft_p99_ms=None, tpot_p99_ms=None
    )
    # Loopback and the event loop add a little to the server's delays, never take from them.
    assert replay.ttft_p99_ms <= measured["ttft_ms"]["p50"] <= replay.ttft_p99_ms + 150
    assert 0.9 * replay.tpot_p99_ms <= measured["tpot_ms"]["p50"] <= replay.tpot_p99_ms + 40


# --- The command, end to end -----------------------------------------------------------------------


# With "--load-curve", CURVE: the question of each test below.
FLEET_QUESTION = (
    "recommend", "llama-3.1-8b", "--inference", "--input-tokens", "1500", "--output-tokens", "300",
    "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--cloud", "aws", "--no-store",
)  # fmt: skip


def test_recommend_with_a_load_curve_prints_the_fleet_per_interval(tmp_path: Path) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_second\n0,4\n8,24\n20,10\n")
    report = tmp_path / "fleet.html"
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), "--json", "--report", str(report),
                         columns=250)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [row["start"] for row in out["intervals"]] == ["00:00", "08:00", "20:00"]
    replicas = [row["replicas"] for row in out["intervals"]]
    assert replicas[0] < replicas[1] and all(r >= 1 for r in replicas)
    assert all(row["static_peak_replicas"] >= replicas[1] * 0.8 for row in out["intervals"])
    assert out["fleet"]["usd_per_month"] <= out["static_peak"]["usd_per_month"]
    assert 0 <= out["fleet"]["spot_share"] <= 1 and out["fleet"]["usd_per_million_output_tokens"] > 0
    assert out["replay_slo_met_share"] >= 2 / 3
    page = report.read_text()
    assert 'Plotly.newPlot("replicas-over-the-day"' in page and "Replicas over the day" in page
    shown = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), columns=250)
    assert shown.returncode == 0 and "Static peak" in shown.stdout and "08:00" in shown.stdout


def test_recommend_with_a_bad_curve_exits_two_with_one_line(tmp_path: Path) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_second\n25,4\n")
    done = run_perdollar(*FLEET_QUESTION, "--load-curve", str(curve), columns=250)
    assert done.returncode == 2
    assert "--load-curve" in done.stderr and "hour must be a whole hour" in done.stderr


def test_a_plan_the_replay_finds_short_gets_one_more_instance_and_meets_the_slo() -> None:
    from perdollar.predict.llm_serving.fleet import IntervalReplay
    from perdollar.price.fleet import Fleet, interval_costs
    from perdollar.select.fleet import repaired_by_replay

    # The capacity model says one replica takes 8 requests/s; served one by one, a replica prefills
    # only 6.7 prompts/s (0.15 s each), so the busy interval is a replica short, the quiet one not.
    option = _option("g", 2.0, (8.0,))
    rates, durations = [(2.0,), (8.0,)], [600.0, 600.0]
    policy = FleetPolicy(target_utilisation=1.0, min_replicas=1)
    fleet = mixed_fleet([option], rates, durations, policy)
    assert fleet is not None and fleet.instances == ((1,), (1,))
    service = _flat_service(0.15, 0.02, 50)
    slo = {"ttft_p99_ms": 1000.0, "tpot_p99_ms": 80.0}
    replayed: list[int] = []

    def replay_again(plan: Fleet, intervals: Sequence[int]) -> dict[int, IntervalReplay]:
        out = {}
        for h in intervals:
            replayed.append(h)
            arrivals, classes = poisson_arrivals(list(rates[h]), durations[h], max_requests=3000, seed=h)
            pools = [Pool(service, plan.instances[h][0], plan.routed[h][0])]
            out[h] = replay_interval(arrivals, classes, pools, **slo, seed=h)
        return out

    first = replay_again(fleet, [0, 1])
    assert first[0].meets_slo and not first[1].meets_slo
    repaired = repaired_by_replay(fleet, [first[0], first[1]], replay_again, durations, policy)
    assert repaired.fleet.instances == ((1,), (2,))
    assert repaired.added_instances == (0, 1)
    assert all(r.meets_slo for r in repaired.replay)
    assert replayed == [0, 1, 1]  # only the interval that missed is replayed again
    # The added instance is paid for: 10 minutes more of one instance (this option starts at once).
    costs = interval_costs([option], ((1,), (2,)), durations, policy)
    assert repaired.fleet.cost_per_interval == pytest.approx(costs)
    assert repaired.fleet.cost == pytest.approx(fleet.cost + 2.0 * 600 / 3600)
