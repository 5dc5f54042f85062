"""The question perdollar answers, as plain typed data: what to run, how much, by when, where.

A :class:`Question` is stored with its answer so that ``perdollar history reevaluate`` can ask it
again against today's catalog; every field is a value, never a free-form dictionary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perdollar.vocabulary import Kind

DEFAULT_CONFIDENCE = 0.9
DEFAULT_SERVING_HEADROOM = 1.25


@dataclass(frozen=True, slots=True)
class SpotSettings:
    """The user's overrides of the spot model (None: perdollar's defaults)."""

    checkpoint_seconds: float | None = None
    restart_minutes: float | None = None
    interruption_rate: float | None = None  # monthly fraction applied to every spot offer


@dataclass(frozen=True, slots=True)
class ServingGoal:
    """What a deployment must serve: a request rate within latency objectives."""

    qps: float
    slo_ms: tuple[tuple[float, float], ...]  # (quantile, milliseconds), e.g. ((0.99, 50.0),)
    max_wait_ms: float | None = None
    headroom: float = DEFAULT_SERVING_HEADROOM
    spot_overprovision: float | None = None
    max_batch: int | None = None

    @property
    def slo(self) -> dict[float, float]:
        return dict(self.slo_ms)


@dataclass(frozen=True, slots=True)
class LanguageModelSettings:
    """A language model's step: sequence length, batches, fine-tuning, and a plan the user fixed."""

    seq_len: int | None = None
    micro_batch: int | None = None  # sequences per GPU per micro-step (None: the planner chooses)
    global_batch: int | None = None  # sequences per optimizer step
    finetune: str | None = None  # full | lora | qlora
    lora_rank: int | None = None
    plan: str | None = None  # a plan token ("fsdp+ac,tp2"); None: the planner searches
    attention_kernel: str | None = None  # flash2 | native (None: flash2)
    framework: str | None = None  # hf | unsloth | megatron … (None: the fine-tuning mode's default)
    # Serving: tokens in and out of a request and the latency objectives (p99, milliseconds).
    input_tokens: int | None = None
    output_tokens: int | None = None
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """Everything that defines one question, so that it can be stored and asked again."""

    workload_name: str  # as it loads from anywhere: a workload file by its absolute path
    workload_fingerprint: str = ""
    # The name the workload gives itself (a file's Workload(name=...), a built-in's own name for an
    # alias): what the history lists it under, as it lists the workload's measurements.
    workload_label: str = ""
    kind: Kind = "train"
    objective: str = "samples-per-dollar"  # training objectives, or usd-per-million-requests
    target_samples: float | None = None
    deadline_hours: float | None = None
    budget_usd: float | None = None
    weights: str | None = None  # --objective weighted: "time=1,cost=2"
    confidence: float = DEFAULT_CONFIDENCE  # required P(finish by the deadline)
    market: str = "any"
    clouds: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    max_nodes: int = 1
    batch_size: int | None = None
    precision: str | None = None
    spot: SpotSettings = field(default_factory=SpotSettings)
    top: int = 0  # feasible candidates to keep beyond the default
    serving: ServingGoal | None = None
    language_model: LanguageModelSettings | None = None  # set when the workload is a language model

    @property
    def has_target(self) -> bool:
        return bool(self.target_samples)


# Keys of the free-form ``options`` that questions stored by earlier versions carried.
_LEGACY_SPOT = ("checkpoint_seconds", "restart_minutes", "interruption_rate")
_LEGACY_FIELDS = ("weights", "confidence", "batch_size", "precision", "top")


def upgrade_legacy_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A stored question's JSON with its old ``options`` dictionary spread into today's fields."""
    data = {k: v for k, v in payload.items() if k != "options"}
    options = payload.get("options")
    if not isinstance(options, Mapping):
        return data
    for key in _LEGACY_FIELDS:
        if options.get(key) is not None and key not in data:
            data[key] = options[key]
    spot = {k: options[k] for k in _LEGACY_SPOT if options.get(k) is not None}
    if spot and "spot" not in data:
        data["spot"] = spot
    if "qps" in options and "serving" not in data:
        slo = options.get("slo_ms") or {}
        data["serving"] = {
            "qps": options["qps"],
            "slo_ms": [[float(str(label)[1:]) / 100, ms] for label, ms in slo.items()],
            "max_wait_ms": options.get("max_wait_ms"),
            "headroom": options.get("headroom", DEFAULT_SERVING_HEADROOM),
            "spot_overprovision": options.get("spot_overprovision"),
            "max_batch": options.get("max_batch"),
        }
    return data
