"""`perdollar export`: SageMaker and EC2 launch descriptions that the AWS API schema accepts.

botocore's own validator checks each request against the service model shipped with boto3
(offline): a misspelt key or a wrong type fails here, not at launch time.
"""

from __future__ import annotations

import json
from pathlib import Path

import botocore.session
import pytest
import yaml
from botocore.validate import ParamValidator

from cli_runner import run_perdollar
from perdollar.errors import PerdollarError
from perdollar.launch.export import describe, parse_candidate


def _validate(service: str, operation: str, params: dict) -> None:
    model = botocore.session.get_session().get_service_model(service)
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()


def test_parse_candidate_forms() -> None:
    spec = parse_candidate("4x ml.g5.4xlarge spot")
    assert (spec.count, spec.instance_type, spec.spot, spec.cloud) == (4, "g5.4xlarge", True, "aws")
    label = parse_candidate("2x g5.12xlarge on-demand (aws us-west-2)")
    assert (label.count, label.spot, label.region) == (2, False, "us-west-2")
    with pytest.raises(PerdollarError):
        parse_candidate("four g5 please")


def test_sagemaker_spot_description_is_a_valid_create_training_job() -> None:
    spec = parse_candidate("4x g5.4xlarge spot")
    description = describe(spec, "sagemaker", region="us-east-1", max_run_hours=12, max_wait_hours=24)
    estimator = description["estimator"]
    assert estimator["use_spot_instances"] is True and estimator["max_wait"] == 24 * 3600
    assert estimator["instance_type"] == "ml.g5.4xlarge" and estimator["instance_count"] == 4
    assert len(estimator["subnets"]) == 1  # one subnet: one availability zone for all four
    assert estimator["distribution"] == {"torch_distributed": {"enabled": True}}
    request = description["create_training_job"]
    assert request["EnableManagedSpotTraining"] is True
    assert request["StoppingCondition"] == {
        "MaxRuntimeInSeconds": 12 * 3600,
        "MaxWaitTimeInSeconds": 24 * 3600,
    }
    _validate("sagemaker", "CreateTrainingJob", request)
    with pytest.raises(PerdollarError, match="max_wait"):
        describe(spec, "sagemaker", region="us-east-1", max_run_hours=12, max_wait_hours=1)


def test_ec2_description_has_a_cluster_placement_group_and_valid_run_instances() -> None:
    spec = parse_candidate("4x g5.4xlarge spot")
    description = describe(spec, "ec2", region="us-east-1")
    _validate("ec2", "CreatePlacementGroup", description["create_placement_group"])
    _validate("ec2", "RunInstances", description["create_instances"])
    params = description["create_instances"]
    assert description["create_placement_group"]["Strategy"] == "cluster"
    assert params["Placement"]["GroupName"] == description["create_placement_group"]["GroupName"]
    assert params["MinCount"] == params["MaxCount"] == 4
    assert params["InstanceMarketOptions"]["MarketType"] == "spot"
    efa = describe(parse_candidate("2x p4d.24xlarge"), "ec2", region="us-east-1", efa_interfaces=4)
    _validate("ec2", "RunInstances", efa["create_instances"])
    assert efa["create_instances"]["NetworkInterfaces"][0]["InterfaceType"] == "efa"
    assert "InstanceMarketOptions" not in efa["create_instances"]


def test_non_aws_candidates_are_refused() -> None:
    with pytest.raises(PerdollarError, match="AWS"):
        describe(parse_candidate("a2-highgpu-1g", cloud="gcp"), "ec2", region="us-central1")


def test_cli_export(tmp_path: Path) -> None:
    home = {"PERDOLLAR_HOME": str(tmp_path)}
    done = run_perdollar("export", "ml.g4dn.12xlarge", "--format", "sagemaker", "--json", env=home)
    assert done.returncode == 0, done.stderr
    description = json.loads(done.stdout)
    assert description["estimator"]["instance_type"] == "ml.g4dn.12xlarge"
    assert description["price_per_hour_usd"] > 0 and description["price_captured_at"]
    out = tmp_path / "ec2.yaml"
    done = run_perdollar("export", "4x g5.2xlarge spot", "--format", "ec2", "--out", str(out), env=home)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(out.read_text())["create_instances"]["InstanceType"] == "g5.2xlarge"
    bad = run_perdollar("export", "g5.nosuch", "--format", "ec2", env=home)
    assert bad.returncode == 2 and "g5.nosuch" in bad.stderr and "Traceback" not in bad.stderr
