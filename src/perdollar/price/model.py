"""An estimate: one priced candidate configuration (offer × nodes), with spot expectations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from perdollar.configuration import Configuration
from perdollar.predict.model import Basis


@dataclass(frozen=True, slots=True)
class ServingFigures:
    """A serving deployment's own figures, for networks served per request and language models
    served per token alike: what it serves, how it is laid out, its latency and its unit price.

    A figure that does not apply to the kind of deployment is None.
    """

    requests_per_second: float = 0.0  # the rate asked for, all replicas together
    slo: str = ""  # the latency objectives, as said to the user ("P99 ≤ 50 ms")
    replicas: int = 0
    replicas_per_instance: int = 0
    spot_extra_instances: int = 0  # instances added on spot to cover interruptions
    batch: float = 0  # requests per batch (networks); mean running sequences per replica (language models)
    price_per_instance_per_hour: float | None = None  # USD/h of one instance of the deployment
    utilisation: float | None = None  # share of the replicas' capacity the rate uses
    # Networks, per request.
    max_wait_ms: float | None = None
    latency_quantile: float | None = None  # e.g. 0.99
    latency_ms: float | None = None  # at that quantile
    latency_high_ms: float | None = None  # the band's upper end
    capacity_per_replica_rps: float | None = None
    rate_per_replica_rps: float | None = None
    usd_per_million_requests: float | None = None
    usd_per_million_requests_high: float | None = None
    # Language models, per token.
    tensor_parallel: int | None = None
    precision: str | None = None
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None
    max_concurrent_sequences: float | None = None
    kv_cache_gib: float | None = None
    engine: str | None = None  # the serving engine the figures assume
    kv_precision: str | None = None
    usd_per_million_output_tokens: float | None = None
    usd_per_million_tokens: float | None = None
    # Language models' whole bill: energy and emissions per million tokens (in and out, and
    # output only), and the weights every instance pulls per deployment start.
    energy_kwh_per_million_tokens: float | None = None
    co2e_g_per_million_tokens: float | None = None
    energy_kwh_per_million_output_tokens: float | None = None
    co2e_g_per_million_output_tokens: float | None = None
    grid_gco2e_per_kwh: float | None = None
    weights_gb: float | None = None
    weights_egress_usd: float | None = None
    weights_load_s: float | None = None
    # How the catalog got the price (a cloud's list price, a spot price history, an estimate).
    price_basis: str | None = None
    # Language models' 80% bands from the held-out error of predictions like them (what the cost
    # per output token, TTFT and TPOT may be), and the group of held-out rows that set them.
    usd_per_million_output_tokens_low: float | None = None
    usd_per_million_output_tokens_high: float | None = None
    ttft_p99_ms_low: float | None = None
    ttft_p99_ms_high: float | None = None
    tpot_p99_ms_low: float | None = None
    tpot_p99_ms_high: float | None = None
    band_group: str | None = None  # "unvalidated" where no held-out row is like it
    band_rows: int | None = None

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> ServingFigures:
        """Stored figures, those written by earlier versions as a loose dictionary included (the
        request rate as ``qps``, the latency under its quantile's name, ``p99_ms``)."""
        data = dict(payload)
        if "qps" in data:
            data.setdefault("requests_per_second", data.pop("qps"))
        for key in [k for k in data if k.startswith("p") and k.endswith("_ms") and k[1:-3].isdigit()]:
            data.setdefault("latency_quantile", int(key[1:-3]) / 100)
            data.setdefault("latency_ms", data.pop(key))
            data.setdefault("latency_high_ms", data.pop(f"{key}_high", None))
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, slots=True)
class Estimate:
    cloud: str
    instance_type: str
    region: str
    market: str  # on-demand | spot
    nodes: int
    accelerator: str | None  # accelerator key, None for CPU-only
    accelerators_per_node: float
    samples_per_second: float
    samples_per_second_low: float
    samples_per_second_high: float
    basis: Basis
    bottleneck: str
    price_per_hour: float  # all nodes, USD/h
    samples_per_dollar: float
    time_to_target_hours: float | None
    cost_to_target_usd: float | None
    expected_time_hours: float | None  # spot: with interruptions, checkpoints and restarts
    expected_cost_usd: float | None
    p_meet_deadline: float | None
    fits: bool
    excluded_reason: str  # empty when the candidate is feasible
    interruption_bucket: str | None = None
    checkpoint_interval_hours: float | None = None
    captured_at: str = ""
    vcpus_per_node: float = 0.0
    network_gbps: float | None = None
    # Serving deployments only: replicas, batch, latency, $ per million requests or tokens.
    serving: ServingFigures | None = None
    # Samples per dollar after spot losses (checkpoints, lost work, restarts): what ranks spot.
    effective_samples_per_dollar: float | None = None
    interruptions_per_hour: float | None = None  # all nodes together (N × per-node hazard)
    flags: tuple[str, ...] = ()  # catalog data-quality flags of the offer
    # The price's band, all nodes, USD/h: spot over the zones it may land in, widened by its age.
    price_per_hour_low: float | None = None
    price_per_hour_high: float | None = None
    # What the prediction assumed that the user should know before renting: a memory fit inside the
    # estimate's reserve ("tight: …"), a precision the chip falls back to ("fp16 with loss scaling: …").
    remarks: tuple[str, ...] = ()

    # Language models: the training plan this configuration runs (token and sentence), its model
    # FLOPs utilisation and the memory it holds per GPU; samples are then tokens.
    plan: str = ""
    plan_text: str = ""
    mfu: float | None = None
    memory_per_gpu_gib: float | None = None
    # The held-out group of training runs whose errors set the band (predict/llm/training_bands.py)
    # and its rows; empty where the band comes from the basis alone.
    band_group: str = ""
    band_rows: int | None = None
    # The training stack a non-GPU chip runs ("MaxText (JAX/XLA)"): choosing it means moving the job
    # there. Empty on GPUs, which run the PyTorch code as it is.
    stack_label: str = ""

    # The bill beyond instance-hours (already inside the expected time and cost): copying the data
    # from its region, storing checkpoints, and the run's energy and emissions.
    egress_usd: float | None = None
    transfer_hours: float | None = None
    storage_usd: float | None = None
    energy_kwh: float | None = None
    carbon_kg: float | None = None
    grid_gco2e_per_kwh: float | None = None
    grid_carbon_year: int | None = None
    # What every node does before the first step (provisioning, image, downloads, start-up): the
    # hours inside the expected time and what they cost on all nodes, inside the expected cost.
    fixed_hours: float | None = None
    fixed_usd: float | None = None

    # Written into every JSON form of an estimate (``--json``, the store) beside the fields.
    json_properties: ClassVar[tuple[str, ...]] = ("label",)

    @property
    def feasible(self) -> bool:
        return not self.excluded_reason

    @property
    def configuration(self) -> Configuration:
        return Configuration(
            nodes=self.nodes,
            instance_type=self.instance_type,
            market=self.market or None,
            cloud=self.cloud or None,
            region=self.region or None,
            plan=self.plan or None,
        )

    @property
    def label(self) -> str:
        """``2x g5.12xlarge spot (aws us-east-1)``: what the tables print and the commands accept."""
        return self.configuration.label
