"""Labels the program really prints: a recommendation on the bundled catalog, its tables, its JSON
and the store all give text that reads back as the estimate's configuration; ``--only`` picks by it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from fixtures.store.samples import make_estimate, make_recommendation
from perdollar.configuration import Configuration, parse_configuration
from perdollar.errors import NothingFeasibleError, PerdollarError
from perdollar.launch.restrict import restrict_recommendation, select_only
from perdollar.select.model import Recommendation


@pytest.fixture(scope="module")
def recommendation() -> Recommendation:
    from perdollar.ask import recommend

    return recommend("mlp", samples=1e6, max_nodes=2, market="any")


def test_every_printed_label_reads_back_as_its_estimate(recommendation: Recommendation) -> None:
    from perdollar.report.tables import configuration as table_cell

    estimates = recommendation.estimates
    assert len(estimates) > 20 and {e.nodes for e in estimates} == {1, 2}
    assert {e.market for e in estimates} == {"spot", "on-demand"}
    for estimate in estimates:
        written = Configuration(
            estimate.nodes, estimate.instance_type, estimate.market, estimate.cloud, estimate.region
        )
        where = f"({estimate.cloud} {estimate.region})"
        assert estimate.label == f"{estimate.nodes}x {estimate.instance_type} {estimate.market} {where}"
        assert parse_configuration(estimate.label) == written == estimate.configuration
        assert parse_configuration(table_cell(estimate)) == written  # the table's two-line cell


def test_every_estimate_json_carries_its_label(recommendation: Recommendation) -> None:
    from perdollar.select.serialize import recommendation_to_dict

    records = recommendation_to_dict(recommendation)["estimates"]
    assert [r["label"] for r in records] == [e.label for e in recommendation.estimates]
    for record in records:
        parts = (record["instance_type"], record["market"], record["cloud"], record["region"])
        assert parse_configuration(record["label"]) == Configuration(record["nodes"], *parts)


def test_stored_recommendations_carry_labels_and_still_decode(tmp_path: Path) -> None:
    from perdollar.store import open_store

    path = tmp_path / "store.sqlite"
    original = make_recommendation()
    with open_store(f"sqlite:///{path}") as store:
        stored_id = store.save_recommendation(original)
    with sqlite3.connect(path) as connection:
        (payload,) = connection.execute(
            "select payload from recommendations where id = ?", (stored_id,)
        ).fetchone()
    labels = [e["label"] for e in json.loads(payload)["estimates"]]
    assert labels[:2] == ["1x g5.xlarge spot (aws us-east-1)", "1x g5.xlarge on-demand (aws us-east-1)"]
    with open_store(f"sqlite:///{path}") as store:
        assert store.get_recommendation(stored_id) == original


RANKED = (
    make_estimate("g5.xlarge", market="spot", region="us-east-1"),
    make_estimate("g5.xlarge", market="spot", region="us-west-2"),
    make_estimate("g5.xlarge", market="on-demand", region="us-east-1"),
    make_estimate("g5.2xlarge", market="spot", region="us-east-1"),
    make_estimate("a2-highgpu-1g", cloud="gcp", market="spot", region="us-central1"),
    make_estimate("g4dn.xlarge", excluded="does not fit: needs 18 GiB, T4 has 16 GiB"),
)


@pytest.mark.parametrize(
    ("texts", "picked"),
    [
        (["1x g5.xlarge spot (aws us-west-2)"], [1]),  # a label: exactly that estimate
        (["g5.xlarge"], [0, 1, 2]),  # only the parts given: every market and region
        (["g5.xlarge spot"], [0, 1]),
        (["g5.xlarge @us-east-1"], [0, 2]),
        (["ml.g5.xlarge od"], [2]),  # a SageMaker name is its EC2 shape
        (["gcp:a2-highgpu-1g", "g5.2xlarge"], [3, 4]),  # in rank order
    ],
)
def test_select_only_keeps_what_the_texts_name(texts: list[str], picked: list[int]) -> None:
    configurations = [parse_configuration(t) for t in texts]
    assert select_only(RANKED, configurations) == tuple(RANKED[i] for i in picked)


def test_select_only_refuses_a_configuration_it_cannot_find_or_run() -> None:
    with pytest.raises(PerdollarError) as unknown:
        select_only(RANKED, [parse_configuration("2x g5.xlarge spot")])  # one node only was ranked
    assert unknown.value.exit_code == 2 and "1x g5.xlarge spot (aws us-east-1)" in unknown.value.one_line()
    with pytest.raises(NothingFeasibleError, match="does not fit") as excluded:
        select_only(RANKED, [parse_configuration("g4dn.xlarge")])
    assert excluded.value.exit_code == 3
    with pytest.raises(PerdollarError, match="none of the ranked"):
        select_only(RANKED, [parse_configuration("g5.xlarge with fsdp")])  # no estimate has a plan yet


def test_restricting_a_recommendation_drops_its_indices() -> None:
    restricted = restrict_recommendation(make_recommendation(), [parse_configuration("p4d.24xlarge")])
    assert [e.label for e in restricted.estimates] == ["1x p4d.24xlarge spot (aws us-east-1)"]
    assert restricted.pareto == () and restricted.ties == ()


def test_the_report_names_configurations_by_their_labels() -> None:
    from perdollar.report import plots
    from perdollar.report.html import render_report

    recommendation = make_recommendation()
    page = render_report(recommendation, plotly_js="/* plotly */", generated_at="2026-06-02")
    for estimate in recommendation.estimates:
        assert estimate.label in page
    bars = plots.samples_per_dollar_bars(recommendation)["data"][0]
    assert bars["text"][-1] == "1x g5.xlarge spot (aws us-east-1)"  # the best A10G offer, drawn last
