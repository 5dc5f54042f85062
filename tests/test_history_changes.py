"""Re-evaluation: did the top choice flip, and why (prices, measurements, exclusions)."""

from __future__ import annotations

import dataclasses

from fixtures.store.samples import make_estimate, make_recommendation
from perdollar.report.changes import compare


def _ranked(*estimates):  # type: ignore[no-untyped-def]
    feasible = sorted((e for e in estimates if e.feasible), key=lambda e: -e.samples_per_dollar)
    return tuple(feasible) + tuple(e for e in estimates if not e.feasible)


def test_a_spot_price_drop_flips_the_top_choice_and_says_so() -> None:
    old = make_recommendation(
        estimates=_ranked(
            make_estimate("g5.xlarge", market="spot", rate=900, price=0.60),
            make_estimate("p4d.24xlarge", market="spot", rate=15000, price=12.0),
        )
    )
    new = make_recommendation(
        captured_at="2026-09-01",
        estimates=_ranked(
            make_estimate("g5.xlarge", market="spot", rate=900, price=0.60),
            make_estimate("p4d.24xlarge", market="spot", rate=15000, price=12.0 * 0.62),
        ),
    )
    result = compare(old, new)
    assert result.flipped
    assert result.old_top == "1x g5.xlarge spot (aws us-east-1)"
    assert result.new_top == "1x p4d.24xlarge spot (aws us-east-1)"
    assert any(
        "p4d.24xlarge spot price fell 38% since 2026-06-01 ($12.00/h → $7.44/h)" in r for r in result.reasons
    )
    assert any("now gives 1.3× the samples per dollar" in r for r in result.reasons)
    assert result.summary.startswith("top choice flipped")


def test_unchanged_top_choice_still_reports_the_largest_price_moves() -> None:
    old = make_recommendation()
    cheaper_v100 = tuple(
        dataclasses.replace(e, price_per_hour=e.price_per_hour * 0.5)
        if e.instance_type == "p3.2xlarge"
        else e
        for e in old.estimates
    )
    result = compare(old, make_recommendation(estimates=cheaper_v100))
    assert not result.flipped and result.reasons == ()
    assert result.price_moves == ("p3.2xlarge on-demand price fell 50% since 2026-06-01 ($3.06/h → $1.53/h)",)


def test_old_top_excluded_or_gone_and_new_measurements_are_reasons() -> None:
    old = make_recommendation()
    gone = tuple(e for e in old.estimates if not (e.instance_type == "g5.xlarge" and e.market == "spot"))
    assert "no longer offered" in compare(old, make_recommendation(estimates=gone)).reasons[0]

    measured = tuple(
        dataclasses.replace(e, basis="measured", samples_per_second=1100.0)
        if e.instance_type == "g5.xlarge" and e.market == "spot"
        else e
        for e in old.estimates
    )
    reasons = compare(old, make_recommendation(estimates=measured)).reasons
    assert reasons == ("g5.xlarge throughput up 22% (spec → measured): 900 → 1,100 samples/s",)


def test_prices_from_the_stored_snapshot_cover_offers_the_old_answer_did_not_rank() -> None:
    old = make_recommendation(estimates=(make_estimate("g5.xlarge", market="spot", price=0.4),))
    new = make_recommendation(
        estimates=_ranked(
            make_estimate("g5.xlarge", market="spot", price=0.4),
            make_estimate("g6.xlarge", market="spot", rate=1500, price=0.3, accelerator="L4"),
        )
    )
    result = compare(old, new, {("aws", "g6.xlarge", "us-east-1", "spot"): 0.6})
    assert result.flipped
    assert "1x g6.xlarge spot (aws us-east-1) was not a candidate on 2026-06-01" in result.reasons
    assert "g6.xlarge spot price fell 50% since 2026-06-01 ($0.6/h → $0.3/h)" in result.price_moves
