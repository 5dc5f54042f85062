"""GPU quotas: the family a cloud counts by, reading a quotas file, and the exclusion end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar.catalog.purchase import capacity_flags
from perdollar.catalog.quotas import (
    Quota,
    instance_family,
    over_quota_reasons,
    quota_limit,
    read_quotas,
)
from perdollar.errors import PerdollarError


@pytest.mark.parametrize(
    ("cloud", "name", "family"),
    [
        ("aws", "p5.48xlarge", "p5"),
        ("aws", "ml.g5.xlarge", "g5"),
        ("gcp", "a3-highgpu-8g", "a3"),
        ("azure", "Standard_ND96isr_H100_v5", "NDv5"),
        ("azure", "Standard_NC24ads_A100_v4", "NCv4"),
        ("azure", "Standard_NC6", "NC"),
    ],
)
def test_instance_family_is_the_clouds_quota_family(cloud: str, name: str, family: str) -> None:
    assert instance_family(cloud, name) == family


def test_the_smallest_matching_quota_applies(tmp_path: Path) -> None:
    path = tmp_path / "quotas.csv"
    path.write_text("cloud,region,family,gpus\naws,*,p5,16\naws,us-east-1,p5,8\naws,*,g*,4\nazure,*,NDv5,0\n")
    quotas = read_quotas(path)
    limit = quota_limit(quotas, "aws", "us-east-1", "p5.48xlarge")
    assert limit is not None and limit.gpus == 8
    limit = quota_limit(quotas, "aws", "us-west-2", "p5.48xlarge")
    assert limit is not None and limit.gpus == 16
    assert quota_limit(quotas, "aws", "us-east-1", "p4d.24xlarge") is None
    assert quota_limit(quotas, "azure", "eastus", "Standard_ND96isr_H100_v5").gpus == 0  # type: ignore[union-attr]


def test_over_quota_counts_every_machines_gpus() -> None:
    frame = pd.DataFrame({"cloud": ["aws"] * 3, "region": ["us-east-1"] * 3,
                          "instance_type": ["g5.12xlarge", "g5.12xlarge", "p4d.24xlarge"]})  # fmt: skip
    quotas = (Quota("aws", "*", "g5", 8),)
    reasons = over_quota_reasons(frame, quotas, pd.Series([2, 3, 9]), pd.Series([4, 4, 8]))
    assert reasons[0] == ""  # 2 × 4 = 8 GPUs: at the quota
    assert reasons[1] == "needs 12 GPUs; the g5 quota in every region is 8 (--quotas)"
    assert reasons[2] == ""  # no quota for p4d


def test_a_bad_quotas_file_is_one_line_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "quotas.csv"
    path.write_text("cloud,region,family\naws,*,p5\n")
    with pytest.raises(PerdollarError, match="no column 'gpus'"):
        read_quotas(path)
    path.write_text("cloud,region,family,gpus\naws,*,p5,lots\n")
    with pytest.raises(PerdollarError, match="row 2"):
        read_quotas(path)
    with pytest.raises(PerdollarError, match="does not exist"):
        read_quotas(tmp_path / "missing.csv")


def test_capacity_block_machines_are_flagged() -> None:
    assert "capacity-blocks-only" in capacity_flags("aws", "p5en.48xlarge")
    assert "reservation-needed" in capacity_flags("gcp", "a3-megagpu-8g")
    assert capacity_flags("aws", "p5.48xlarge") == ()


def test_a_zero_p5_quota_excludes_every_p5_and_says_why(tmp_path: Path) -> None:
    quotas = tmp_path / "quotas.csv"
    quotas.write_text("cloud,region,family,gpus\naws,*,p5,0\n")
    args = ("recommend", "vit-b16", "--samples", "1e9", "--cloud", "aws", "--market", "on-demand",
            "--show-excluded", "--json", "--no-store")  # fmt: skip
    result = run_perdollar(*args, "--quotas", str(quotas))
    assert result.returncode == 0, result.stderr
    estimates = json.loads(result.stdout)["estimates"]
    feasible = [e for e in estimates if e["feasible"]]
    assert feasible and not [e for e in feasible if instance_family("aws", e["instance_type"]) == "p5"]
    excluded = [e for e in estimates if not e["feasible"] and "quota" in (e["excluded_reason"] or "")]
    assert excluded and all(instance_family("aws", e["instance_type"]) == "p5" for e in excluded)
    assert "the p5 quota in every region is 0" in excluded[0]["excluded_reason"]
    # Without the file p5 machines are ranked: the exclusion came from the quota.
    free = json.loads(run_perdollar(*args).stdout)["estimates"]
    assert [e for e in free if e["feasible"] and instance_family("aws", e["instance_type"]) == "p5"]
    shown = run_perdollar(*args[:-2], "--no-store", "--quotas", str(quotas))
    assert "quota in" in shown.stdout


def test_a_missing_quotas_file_fails_with_a_fix(tmp_path: Path) -> None:
    result = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--no-store",
                           "--quotas", str(tmp_path / "none.csv"))  # fmt: skip
    assert result.returncode != 0
    assert "does not exist" in result.stderr and "cloud,region,family,gpus" in result.stderr
