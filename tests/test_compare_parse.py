"""Parsing of `perdollar compare` configurations."""

from __future__ import annotations

import pytest

from perdollar.errors import PerdollarError
from perdollar.select.compare import parse_config


@pytest.mark.parametrize(
    ("text", "nodes", "name", "market", "cloud", "region"),
    [
        ("4x g5.2xlarge spot", 4, "g5.2xlarge", "spot", None, None),
        ("1x g5.12xlarge on-demand", 1, "g5.12xlarge", "on-demand", None, None),
        ("g5.12xlarge", 1, "g5.12xlarge", "on-demand", None, None),
        ("2 x ml.g5.4xlarge spot @us-west-2", 2, "ml.g5.4xlarge", "spot", None, "us-west-2"),
        ("8× gcp:a2-highgpu-1g od in us-central1", 8, "a2-highgpu-1g", "on-demand", "gcp", "us-central1"),
    ],
)
def test_parse_config(
    text: str, nodes: int, name: str, market: str, cloud: str | None, region: str | None
) -> None:
    spec = parse_config(text)
    assert (spec.nodes, spec.name, spec.market, spec.cloud, spec.region) == (
        nodes,
        name,
        market,
        cloud,
        region,
    )


@pytest.mark.parametrize(
    "text", ["", "4x g5.xlarge spot!", "0x g5.xlarge", "4x g5.xlarge spot us-east-1 extra"]
)
def test_bad_config_is_a_one_line_error(text: str) -> None:
    with pytest.raises(PerdollarError) as error:
        parse_config(text)
    assert "\n" not in error.value.one_line()
