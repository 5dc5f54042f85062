"""Instance-name parsing: table-driven cases, round-trip properties, lookups with suggestions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perdollar import catalog
from perdollar.catalog.model import NameParts
from perdollar.catalog.names import format_instance_name, guess_cloud, parse_instance_name
from perdollar.errors import PerdollarError
from perdollar.vocabulary import CLOUDS

CASES = [
    # name, cloud, (prefix, family, generation, attributes, size)
    ("g4dn.12xlarge", "aws", (None, "g", "4", "dn", "12xlarge")),
    ("ml.g5.4xlarge", "aws", ("ml", "g", "5", "", "4xlarge")),
    ("ml.g4dn.12xlarge", "aws", ("ml", "g", "4", "dn", "12xlarge")),
    ("p6-b200.48xlarge", "aws", (None, "p", "6", "-b200", "48xlarge")),
    ("trn1n.32xlarge", "aws", (None, "trn", "1", "n", "32xlarge")),
    ("inf2.xlarge", "aws", (None, "inf", "2", "", "xlarge")),
    ("c7i.metal-48xl", "aws", (None, "c", "7", "i", "metal-48xl")),
    ("u-6tb1.metal", "aws", (None, "u", None, "-6tb1", "metal")),
    ("a2-highgpu-1g", "gcp", (None, "a", "2", "-highgpu", "1g")),
    ("a3-edgegpu-8g-nolssd", "gcp", (None, "a", "3", "-edgegpu", "8g-nolssd")),
    ("c3d-standard-8", "gcp", (None, "c", "3", "d-standard", "8")),
    ("n1-highmem-16+4xT4", "gcp", (None, "n", "1", "-highmem", "16+4xT4")),
    ("tpu-v5litepod-8", "gcp", (None, "tpu", "v5", "litepod", "8")),
    ("tpu-v4-128", "gcp", (None, "tpu", "v4", "", "128")),
    ("Standard_NC24ads_A100_v4", "azure", ("Standard", "NC", "v4", "ads_A100", "24")),
    ("Standard_ND128isr_NDR_GB200_v6", "azure", ("Standard", "ND", "v6", "isr_NDR_GB200", "128")),
    ("Standard_D8s_v5", "azure", ("Standard", "D", "v5", "s", "8")),
    ("Standard_NC6", "azure", ("Standard", "NC", None, "", "6")),
]


@pytest.mark.parametrize(("name", "cloud", "expected"), CASES)
def test_parse_known_names(name: str, cloud: str, expected: tuple[str | None, ...]) -> None:
    assert guess_cloud(name) == cloud
    parts = parse_instance_name(name)
    assert (parts.prefix, parts.family, parts.generation, parts.attributes, parts.size) == expected
    assert format_instance_name(parts, cloud) == name


@pytest.mark.parametrize("bad", ["", "g4dn", "hello world", "Standard_", "tpu-v5-"])
def test_unreadable_names_raise_one_line_errors(bad: str) -> None:
    with pytest.raises(PerdollarError, match="not an instance name"):
        parse_instance_name(bad, "aws" if "." not in bad else None)


def test_every_catalog_name_round_trips() -> None:
    cat = catalog.load(catalog.BUNDLED_SNAPSHOT)
    for (cloud, name), instance in cat.instance_types.items():
        if cloud not in CLOUDS:  # a GPU cloud's machine is named as its price page names it: no grammar
            assert instance.name_parts is None, name
            continue
        assert instance.name_parts is not None, name
        assert format_instance_name(instance.name_parts, cloud) == name


lower = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=4)
digits = st.integers(min_value=1, max_value=99).map(str)
ec2_sizes = st.sampled_from(
    ["large", "xlarge", "2xlarge", "12xlarge", "48xlarge", "metal", "metal-24xl", "medium"]
)


@given(prefix=st.sampled_from([None, "ml"]), family=lower, generation=digits,
       attributes=st.text("abcdefghinz", max_size=4), size=ec2_sizes)  # fmt: skip
def test_ec2_names_round_trip(
    prefix: str | None, family: str, generation: str, attributes: str, size: str
) -> None:
    parts = NameParts(prefix, family, generation, attributes, size)
    name = format_instance_name(parts, "aws")
    assert parse_instance_name(name) == parts


@given(family=lower, generation=st.integers(1, 9).map(str), series=st.text("adp", max_size=1),
       kind=st.sampled_from(["standard", "highmem", "highcpu", "highgpu", "ultragpu"]),
       size=st.integers(1, 360).map(str))  # fmt: skip
def test_gcp_names_round_trip(family: str, generation: str, series: str, kind: str, size: str) -> None:
    parts = NameParts(None, family, generation, f"{series}-{kind}", size)
    name = format_instance_name(parts, "gcp")
    assert parse_instance_name(name, "gcp") == parts


@given(family=st.text("ABCDEFGHLMN", min_size=1, max_size=3), size=st.integers(1, 416).map(str),
       features=st.text("adilmprst", max_size=4),
       accelerator=st.sampled_from(["", "_A100", "_H100", "_T4", "_NDR_GB200", "_A10"]),
       version=st.sampled_from([None, "v2", "v3", "v5", "v6"]))  # fmt: skip
def test_azure_names_round_trip(
    family: str, size: str, features: str, accelerator: str, version: str | None
) -> None:
    parts = NameParts("Standard", family, version, features + accelerator, size)
    name = format_instance_name(parts, "azure")
    assert parse_instance_name(name, "azure") == parts


# ---- lookups ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bundled() -> catalog.Catalog:
    return catalog.load(catalog.BUNDLED_SNAPSHOT)


def test_sagemaker_names_map_to_their_ec2_shape(bundled: catalog.Catalog) -> None:
    instance = bundled.instance("ml.g4dn.12xlarge")
    assert instance.name == "g4dn.12xlarge"
    assert instance.name_parts is not None and instance.name_parts.prefix == "ml"
    assert (instance.accelerator_key, instance.accelerator_count) == ("T4", 4)


def test_lookup_is_case_insensitive_for_azure(bundled: catalog.Catalog) -> None:
    assert bundled.instance("standard_nc24ads_a100_v4").name == "Standard_NC24ads_A100_v4"


@pytest.mark.parametrize(("typo", "suggestion"), [
    ("g5.2xlarg", "g5.2xlarge"),
    ("a2-highgpu-1", "a2-highgpu-1g"),
    ("Standard_NC24ads_A100_v3", "Standard_NC24ads_A100_v4"),
])  # fmt: skip
def test_unknown_names_suggest_close_ones(bundled: catalog.Catalog, typo: str, suggestion: str) -> None:
    with pytest.raises(PerdollarError, match="did you mean") as info:
        bundled.instance(typo)
    assert suggestion in str(info.value)
    assert "\n" not in str(info.value)


def test_gcp_host_without_gpus_lists_the_combinations(bundled: catalog.Catalog) -> None:
    with pytest.raises(PerdollarError, match=r"n1-highmem-16\+4xT4"):
        bundled.instance("n1-highmem-16")


def test_unknown_cloud_is_refused(bundled: catalog.Catalog) -> None:
    with pytest.raises(PerdollarError, match="unknown cloud 'oracle'"):
        bundled.instance("g5.2xlarge", cloud="oracle")
