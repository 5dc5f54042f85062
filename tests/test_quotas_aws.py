"""`catalog quotas --from-cloud aws`: AWS Service Quotas read through botocore's Stubber from
recorded-shape responses (no network), vCPU quotas turned into GPUs per family."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from perdollar.catalog import load
from perdollar.catalog.quotas import read_quotas, write_quotas
from perdollar.catalog.quotas_aws import aws_gpu_quotas, family_sizes, gpus_within

boto3 = pytest.importorskip("boto3", reason="boto3 reads AWS Service Quotas")
stub = pytest.importorskip("botocore.stub", reason="botocore's Stubber replays the responses")

RESPONSES = Path(__file__).parent / "fixtures" / "aws" / "service_quotas" / "list_service_quotas.json"


def _stubbed_client(region: str) -> Any:
    client = boto3.client(
        "service-quotas", region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stubber = stub.Stubber(client)
    pages = json.loads(RESPONSES.read_text())
    stubber.add_response("list_service_quotas", pages[0], {"ServiceCode": "ec2"})
    stubber.add_response("list_service_quotas", pages[1], {"ServiceCode": "ec2", "NextToken": "page-2"})
    stubber.activate()
    return client


def _vcpu_quota(name: str) -> float:
    for page in json.loads(RESPONSES.read_text()):
        for quota in page["Quotas"]:
            if quota["QuotaName"] == name:
                return float(quota["Value"])
    raise AssertionError(name)


def test_vcpu_quotas_become_gpus_of_whole_machines() -> None:
    assert gpus_within(192, ((192, 8), (16, 1))) == 12  # twelve 16-vCPU single-GPU machines
    assert gpus_within(191, ((192, 8),)) == 0  # not one whole machine
    assert gpus_within(64, ((4, 1), (48, 4))) == 16


def test_aws_quotas_from_service_quotas(tmp_path: Path) -> None:
    instances = load().instances_frame()
    quotas = aws_gpu_quotas(["us-east-1"], instances, client_for=_stubbed_client)
    by_family = {q.family: q for q in quotas}
    sizes = family_sizes(instances)
    p_quota, g_quota = (
        _vcpu_quota("Running On-Demand P instances"),
        _vcpu_quota("Running On-Demand G and VT instances"),
    )
    for family, vcpu_quota in (("p5", p_quota), ("p4d", p_quota), ("g5", g_quota), ("g6e", g_quota)):
        expected = max(math.floor(vcpu_quota / v) * g for v, g in sizes[family])
        assert by_family[family].gpus == expected
        assert by_family[family].region == "us-east-1"
    # Classes the account has no quota entry for (DL, Inf, Trn here) are left out, not set to 0.
    assert not [q for q in quotas if q.family.startswith(("trn", "inf", "dl"))]
    path = tmp_path / "quotas.csv"
    write_quotas(path, quotas)
    assert read_quotas(path) == quotas


def test_the_command_names_the_fix_for_other_clouds(tmp_path: Path) -> None:
    from cli_runner import run_perdollar

    result = run_perdollar("catalog", "quotas", "--from-cloud", "gcp", "--out", str(tmp_path / "q.csv"))
    assert result.returncode != 0
    assert "only AWS quotas" in result.stderr and "by hand" in result.stderr
