"""Launch descriptions for engines other than SkyPilot: SageMaker training jobs and raw EC2.

Descriptions only — nothing here calls a cloud. The SageMaker description has the PyTorch
estimator's settings (managed spot with ``max_wait``, one subnet so every instance lands in one
availability zone) and the equivalent ``CreateTrainingJob`` request; the EC2 description has a
cluster placement group (co-location on one high-bandwidth network segment) and the
``create_instances`` (RunInstances) parameters, with EFA interfaces where the instance has them.
Placeholders in angle brackets are the user's to fill in (role, subnet, image).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perdollar.catalog.managed import MANAGED_SPOT_SOURCE, rate_for, service_instance_name
from perdollar.configuration import Configuration, parse_configuration
from perdollar.errors import PerdollarError
from perdollar.jsonable import JsonObject, JsonValue

if TYPE_CHECKING:
    from perdollar.catalog import Catalog

FORMATS = ("sagemaker", "ec2")
PLACEMENT_GROUP = "perdollar-cluster"


@dataclass(frozen=True, slots=True)
class CandidateSpec:
    count: int
    instance_type: str  # the EC2 name (SageMaker's ml. prefix removed)
    spot: bool
    cloud: str
    region: str | None
    plan: str | None = None  # kept for the label: the machines described are the same

    @property
    def label(self) -> str:
        market = "spot" if self.spot else "on-demand"
        parts = Configuration(self.count, self.instance_type, market, self.cloud, self.region, self.plan)
        return parts.label


def parse_candidate(text: str, *, cloud: str | None = None) -> CandidateSpec:
    """Every configuration form (:mod:`perdollar.configuration`): ``"4x g5.4xlarge spot"``,
    ``"ml.g5.12xlarge"``, a label ``recommend`` prints; AWS and on-demand unless named."""
    configuration = parse_configuration(text)
    name = configuration.instance_type
    if name.lower().startswith("ml."):
        name = name[3:]
    return CandidateSpec(
        count=configuration.nodes,
        instance_type=name,
        spot=configuration.market == "spot",
        cloud=configuration.cloud or (cloud or "aws").lower(),
        region=configuration.region,
        plan=configuration.plan,
    )


def _hours_to_seconds(hours: float) -> int:
    return round(hours * 3600)


def sagemaker_description(
    candidate: CandidateSpec,
    *,
    max_run_hours: float,
    max_wait_hours: float | None,
    region: str,
    efa: bool = False,
) -> JsonObject:
    """SageMaker PyTorch estimator settings plus the equivalent CreateTrainingJob request."""
    max_run = _hours_to_seconds(max_run_hours)
    max_wait = _hours_to_seconds(max_wait_hours) if max_wait_hours is not None else max(max_run, 24 * 3600)
    if candidate.spot and max_wait < max_run:
        raise PerdollarError(
            f"--max-wait ({max_wait} s) is shorter than --max-run ({max_run} s)",
            "SageMaker needs max_wait ≥ max_run for spot; raise --max-wait",
        )
    instance = f"ml.{candidate.instance_type}"
    single_subnet: list[JsonValue] = ["<one subnet id: keeps every instance in one availability zone>"]
    estimator: JsonObject = {
        "entry_point": "train.py",
        "source_dir": "<folder with train.py and requirements.txt>",
        "role": "<SageMaker execution role ARN>",
        "instance_type": instance,
        "instance_count": candidate.count,
        "framework_version": "2.1.0",
        "py_version": "py310",
        "max_run": max_run,
        "use_spot_instances": candidate.spot,
        "distribution": {"torch_distributed": {"enabled": True}} if candidate.count > 1 else None,
    }
    stopping: JsonObject = {"MaxRuntimeInSeconds": max_run}
    request: JsonObject = {
        "TrainingJobName": f"perdollar-{candidate.instance_type.replace('.', '-')}-x{candidate.count}",
        "AlgorithmSpecification": {
            "TrainingImage": f"<PyTorch training image URI in {region}>",
            "TrainingInputMode": "File",
        },
        "RoleArn": "<SageMaker execution role ARN>",
        "OutputDataConfig": {"S3OutputPath": "s3://<bucket>/perdollar/output"},
        "ResourceConfig": {"InstanceType": instance, "InstanceCount": candidate.count, "VolumeSizeInGB": 100},
        "StoppingCondition": stopping,
        "EnableManagedSpotTraining": candidate.spot,
    }
    if candidate.spot:
        estimator.update(max_wait=max_wait, checkpoint_s3_uri="s3://<bucket>/perdollar/checkpoints")
        stopping["MaxWaitTimeInSeconds"] = max_wait
        # Spot capacity comes and goes: the job resumes from the last checkpoint SageMaker synced.
        request["CheckpointConfig"] = {
            "S3Uri": "s3://<bucket>/perdollar/checkpoints",
            "LocalPath": "/opt/ml/checkpoints",
        }
    if candidate.count > 1:
        estimator.update(subnets=single_subnet, security_group_ids=["<security group id>"])
        request["VpcConfig"] = {"Subnets": single_subnet, "SecurityGroupIds": ["<security group id>"]}
    estimator = {k: v for k, v in estimator.items() if v is not None}
    notes: list[JsonValue] = [
        "SageMaker cannot use a placement group; one subnet puts every instance in one availability zone.",
    ]
    if efa:
        notes.append("this instance type has EFA: SageMaker attaches it for multi-instance jobs.")
    return {
        "format": "sagemaker",
        "region": region,
        "estimator": estimator,
        "create_training_job": request,
        "notes": notes,
    }


def ec2_description(
    candidate: CandidateSpec, *, region: str, efa_interfaces: int = 0, zone: str | None = None
) -> JsonObject:
    """A cluster placement group and the RunInstances (`ec2.create_instances`) parameters."""
    placement: JsonObject = {"GroupName": PLACEMENT_GROUP}
    if zone:
        placement["AvailabilityZone"] = zone
    params: JsonObject = {
        "ImageId": f"<Deep Learning AMI (PyTorch) id in {region}>",
        "InstanceType": candidate.instance_type,
        "MinCount": candidate.count,
        "MaxCount": candidate.count,
        "Placement": placement,
        "TagSpecifications": [
            {"ResourceType": "instance", "Tags": [{"Key": "created-by", "Value": "perdollar"}]}
        ],
    }
    if candidate.spot:
        params["InstanceMarketOptions"] = {
            "MarketType": "spot",
            "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
        }
    if efa_interfaces > 0 and candidate.count > 1:
        params["NetworkInterfaces"] = [
            {
                "DeviceIndex": 0,
                "NetworkCardIndex": 0,
                "InterfaceType": "efa",
                "SubnetId": "<subnet id>",
                "Groups": ["<security group id>"],
                "DeleteOnTermination": True,
            }
        ]
    else:
        params["SubnetId"] = "<subnet id>"
        params["SecurityGroupIds"] = ["<security group id>"]
    return {
        "format": "ec2",
        "region": region,
        "create_placement_group": {"GroupName": PLACEMENT_GROUP, "Strategy": "cluster"},
        "create_instances": params,
        "notes": [
            "MinCount = MaxCount: all instances start together in the placement group or none do.",
            "a cluster placement group keeps the instances on one low-latency network segment.",
        ],
    }


def describe(
    candidate: CandidateSpec,
    fmt: str,
    *,
    region: str,
    max_run_hours: float = 24.0,
    max_wait_hours: float | None = None,
    efa_interfaces: int = 0,
) -> JsonObject:
    if fmt not in FORMATS:
        raise PerdollarError(
            f"--format {fmt!r} is not one of {', '.join(FORMATS)}", "use --format sagemaker or ec2"
        )
    if candidate.cloud != "aws":
        raise PerdollarError(
            f"{fmt} descriptions are for AWS instances, not {candidate.cloud}",
            "pick an AWS candidate, or launch with `perdollar sweep --via skypilot`",
        )
    if fmt == "sagemaker":
        return sagemaker_description(
            candidate,
            max_run_hours=max_run_hours,
            max_wait_hours=max_wait_hours,
            region=region,
            efa=efa_interfaces > 0,
        )
    return ec2_description(candidate, region=region, efa_interfaces=efa_interfaces)


def describe_from_catalog(
    candidate: CandidateSpec,
    fmt: str,
    catalog: Catalog,
    *,
    region: str | None = None,
    max_run_hours: float = 24.0,
    max_wait_hours: float | None = None,
) -> JsonObject:
    """``describe`` for a catalog instance: its EFA count, the cheapest region, the price used."""
    instance = catalog.instance(candidate.instance_type, candidate.cloud)  # unknown names: "did you mean"
    market = "spot" if candidate.spot else "on-demand"
    offers = [
        o
        for o in catalog.offers
        if o.cloud == instance.cloud and o.instance_type == instance.name and o.market == market
    ]
    asked_region = region or candidate.region
    if asked_region and offers and asked_region not in {o.region for o in offers}:
        raise PerdollarError(
            f"{instance.name} has no {market} offer in {asked_region}",
            f"pick one of {', '.join(sorted({o.region for o in offers})[:8])}",
        )
    cheapest = min(offers, key=lambda o: o.price_per_hour).region if offers else "us-east-1"
    chosen_region = asked_region or cheapest
    description = describe(
        candidate,
        fmt,
        region=chosen_region,
        max_run_hours=max_run_hours,
        max_wait_hours=max_wait_hours,
        efa_interfaces=instance.efa_interfaces,
    )
    price = next((o for o in offers if o.region == chosen_region), None)
    description["instance"] = f"{candidate.count}x {instance.name} {market}"
    described = dataclasses.replace(candidate, instance_type=instance.name, region=chosen_region)
    description["configuration"] = described.label
    description["price_per_hour_usd"] = round(price.price_per_hour * candidate.count, 4) if price else None
    description["price_captured_at"] = str(price.captured_at) if price else None
    if fmt == "sagemaker" and price is not None:
        billed = sagemaker_price(instance.cloud, instance.name, price.price_per_hour, candidate.count,
                                 spot=market == "spot")  # fmt: skip
        description.update(billed)
    return description


def sagemaker_price(
    cloud: str, instance_type: str, vm_price_per_hour: float, count: int, *, spot: bool = False
) -> JsonObject:
    """SageMaker bills its own rate for ``ml.`` instances: the EC2 rate × (1 + its published
    surcharge); managed spot training bills that rate for seconds the spot discount shortens,
    which comes to the EC2 spot rate × the same factor (an estimate: no per-type rate is published)."""
    rate = rate_for("sagemaker", cloud, instance_type, "training")
    if rate is None:
        return {"price_note": f"no SageMaker rate for {instance_type} is bundled: the EC2 price is shown"}
    spot_basis = f"; managed spot: × the EC2 spot discount ({MANAGED_SPOT_SOURCE}), an estimate"
    spot_basis = spot_basis if spot else ""
    return {
        "price_per_hour_usd": round(vm_price_per_hour * (1 + rate.surcharge_vs_vm) * count, 4),
        "ec2_price_per_hour_usd": round(vm_price_per_hour * count, 4),
        "price_basis": f"SageMaker training {service_instance_name('sagemaker', instance_type)}: EC2 rate × "
        f"{1 + rate.surcharge_vs_vm:.3g} ({rate.reference}; {rate.source}, {rate.as_of}){spot_basis}",
        "price_rate_as_of": str(rate.as_of),
    }
