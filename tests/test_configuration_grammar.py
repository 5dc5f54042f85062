"""One configuration grammar: every label a command prints reads back as the configuration it names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perdollar.configuration import Configuration, parse_configuration
from perdollar.errors import PerdollarError


def config(
    nodes: int,
    name: str,
    market: str | None = None,
    cloud: str | None = None,
    region: str | None = None,
    plan: str | None = None,
) -> Configuration:
    return Configuration(nodes, name, market, cloud, region, plan)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the label the tables, `recommend --json` and the explanations print
        ("2x g5.12xlarge spot (aws us-east-1)", config(2, "g5.12xlarge", "spot", "aws", "us-east-1")),
        (
            "1x Standard_NC96ads_A100_v4 spot (azure eastus)",
            config(1, "Standard_NC96ads_A100_v4", "spot", "azure", "eastus"),
        ),
        # the inference answer's "Cheapest: 2× …" before it used the label
        ("2× g5.xlarge spot (aws us-east-1)", config(2, "g5.xlarge", "spot", "aws", "us-east-1")),
        # a table cell: the label on two lines, with the data-quality mark
        ("2x p5.48xlarge spot ⚠\n(aws eu-north-1)", config(2, "p5.48xlarge", "spot", "aws", "eu-north-1")),
        # what compare and export documented
        ("4x g5.2xlarge spot", config(4, "g5.2xlarge", "spot")),
        ("4 x g5.2xlarge", config(4, "g5.2xlarge")),
        ("4×g5.2xlarge", config(4, "g5.2xlarge")),
        ("g5.12xlarge", config(1, "g5.12xlarge")),
        ("gcp:a2-highgpu-1g", config(1, "a2-highgpu-1g", cloud="gcp")),
        ("g5.xlarge @us-east-1", config(1, "g5.xlarge", region="us-east-1")),
        ("g5.xlarge in us-east-1", config(1, "g5.xlarge", region="us-east-1")),
        ("g5.xlarge spot us-east-1", config(1, "g5.xlarge", "spot", region="us-east-1")),
        ("1x ml.g5.12xlarge on-demand", config(1, "ml.g5.12xlarge", "on-demand")),
        ("2 x ml.g5.4xlarge spot @us-west-2", config(2, "ml.g5.4xlarge", "spot", region="us-west-2")),
        (
            "8× gcp:a2-highgpu-1g od in us-central1",
            config(8, "a2-highgpu-1g", "on-demand", "gcp", "us-central1"),
        ),
        ("g5.xlarge ondemand", config(1, "g5.xlarge", "on-demand")),
        ("n1-highmem-8+2xT4 spot (gcp)", config(1, "n1-highmem-8+2xT4", "spot", "gcp")),
        ("  3X g5.xlarge SPOT (AWS US-EAST-1)  ", config(3, "g5.xlarge", "spot", "aws", "us-east-1")),
        # an LLM plan rides along as text
        (
            "2x p5.48xlarge spot (aws us-east-1) with fsdp+ac,mb4,ga8",
            config(2, "p5.48xlarge", "spot", "aws", "us-east-1", "fsdp+ac,mb4,ga8"),
        ),
        ("8x p5.48xlarge with tp8", config(8, "p5.48xlarge", plan="tp8")),
    ],
)
def test_every_documented_form_parses(text: str, expected: Configuration) -> None:
    assert parse_configuration(text) == expected


@pytest.mark.parametrize(
    ("configuration", "label"),
    [
        (config(2, "g5.12xlarge", "spot", "aws", "us-east-1"), "2x g5.12xlarge spot (aws us-east-1)"),
        (config(1, "g5.xlarge"), "1x g5.xlarge"),
        (config(4, "g5.xlarge", "on-demand", "aws"), "4x g5.xlarge on-demand (aws)"),
        (config(1, "g5.xlarge", region="us-west-2"), "1x g5.xlarge @us-west-2"),
        (
            config(2, "p5.48xlarge", "spot", "aws", "us-east-1", "fsdp"),
            "2x p5.48xlarge spot (aws us-east-1) with fsdp",
        ),
    ],
)
def test_label_leaves_out_what_is_unknown(configuration: Configuration, label: str) -> None:
    assert configuration.label == label == str(configuration)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "four g5 please",
        "4x g5.xlarge spot!",
        "4x g5.xlarge spot us-east-1 extra",
        "g5.xlarge with",
        "2x g5.xlarge spot (aws us-east-1) with two words",
        "2x g5.xlarge spot (aws us-east-1",
    ],
)
def test_unreadable_text_is_a_one_line_error_showing_the_form(text: str) -> None:
    with pytest.raises(PerdollarError) as error:
        parse_configuration(text)
    line = error.value.one_line()
    assert "\n" not in line
    assert repr(" ".join(text.split())) in line  # names the text
    assert "[N x] [CLOUD:]NAME" in line and "(CLOUD REGION)" in line  # shows the accepted form


@pytest.mark.parametrize(
    ("text", "problem"),
    [("0x g5.xlarge", "0 nodes"), ("gcp:g5.xlarge spot (aws us-east-1)", r"two clouds \(gcp and aws\)")],
)
def test_impossible_configurations_are_refused(text: str, problem: str) -> None:
    with pytest.raises(PerdollarError, match=problem) as error:
        parse_configuration(text)
    assert error.value.exit_code == 2


NAMES = st.from_regex(r"[A-Za-z][A-Za-z0-9_.+\-]{0,30}", fullmatch=True)
CLOUDS = st.from_regex(r"[a-z][a-z0-9\-]{0,10}", fullmatch=True)
REGIONS = st.from_regex(r"[a-z0-9][a-z0-9\-]{0,24}", fullmatch=True)
PLANS = st.from_regex(r"[!-~]{1,24}", fullmatch=True)  # one token of printable ASCII
MARKETS = st.sampled_from([None, "spot", "on-demand"])


@given(
    nodes=st.integers(1, 100_000),
    name=NAMES,
    market=MARKETS,
    cloud=st.none() | CLOUDS,
    region=st.none() | REGIONS,
    plan=st.none() | PLANS,
)
def test_every_label_reads_back_as_its_configuration(
    nodes: int, name: str, market: str | None, cloud: str | None, region: str | None, plan: str | None
) -> None:
    configuration = Configuration(nodes, name, market, cloud, region, plan)
    assert parse_configuration(configuration.label) == configuration


MARKET_SPELLINGS = {"spot": ["spot", "SPOT"], "on-demand": ["on-demand", "ondemand", "od", "OD"]}


@given(
    nodes=st.integers(1, 64),
    name=NAMES,
    market=MARKETS,
    cloud=st.none() | CLOUDS,
    region=st.none() | REGIONS,
    data=st.data(),
)
def test_shorthands_name_the_same_configuration(
    nodes: int, name: str, market: str | None, cloud: str | None, region: str | None, data: st.DataObject
) -> None:
    count = data.draw(
        st.sampled_from([f"{nodes}x ", f"{nodes} x ", f"{nodes}×", f"{nodes} × ", f"{nodes}X "])
    )
    if nodes == 1:
        count = data.draw(st.sampled_from([count, ""]))
    text = count + (f"{cloud}:" if cloud else "") + name
    if market:
        text += " " + data.draw(st.sampled_from(MARKET_SPELLINGS[market]))
    if region:
        written = [f" @{region}", f" @ {region}", f"@{region}", f" in {region}"]
        if region not in ("with", "in", "spot", "on-demand", "ondemand", "od"):
            written.append(f" {region}")
        text += data.draw(st.sampled_from(written))
    assert parse_configuration(text) == Configuration(nodes, name, market, cloud, region)
