"""A question as JSON: the shape ``--json`` prints and the store keeps, written and read back.

The JSON keeps the shape it had before each kind of question had its own goal, so that every
stored question, and every script reading ``--json``, reads as it did: a training goal's fields at
the top (``objective``, ``target_samples`` …), a deployment's rate and request latencies under
``serving`` (``slo_ms``: quantile and milliseconds), a language model's token latencies among its
settings (``ttft_p99_ms``, ``tpot_p99_ms``), a fleet's day under ``traffic``. Questions stored by
still earlier versions carried some settings in a free-form ``options`` dictionary; they are read
too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from perdollar.goals import (
    DEFAULT_SERVING_HEADROOM,
    TOKEN_LATENCY_QUANTILE,
    FleetGoal,
    Goal,
    ServingGoal,
    TrainingGoal,
    served,
)
from perdollar.vocabulary import TOKEN_SERVING_OBJECTIVE, LatencyMetric

if TYPE_CHECKING:
    from perdollar.question import LanguageModelSettings, Question

TRAINING_KEYS = ("objective", "target_samples", "deadline_hours", "budget_usd", "weights", "confidence")
GOAL_KEYS = ("kind", *TRAINING_KEYS, "serving", "traffic")
# A language model's token latencies, kept among its settings, and where they go among them.
TOKEN_LATENCIES: dict[LatencyMetric, str] = {"ttft": "ttft_p99_ms", "tpot": "tpot_p99_ms"}
_TOKEN_LATENCIES_AFTER = "output_tokens"

# Keys of the free-form ``options`` that questions stored by earlier versions carried.
_LEGACY_SPOT = ("checkpoint_seconds", "restart_minutes", "interruption_rate")
_LEGACY_FIELDS = ("weights", "confidence", "batch_size", "precision", "top")


def question_form(question: Question) -> dict[str, Any]:
    """``question``'s fields in the JSON's order, its goal spread where its keys have always been."""
    goal = question.goal
    training = goal if isinstance(goal, TrainingGoal) else TrainingGoal()
    serving = served(goal)
    form: dict[str, Any] = {}
    for item in dataclasses.fields(question):
        name = item.name
        if name == "family":
            form["kind"] = goal.kind
        if name == "goal":
            form["objective"] = goal.objective
            form |= {key: getattr(training, key) for key in TRAINING_KEYS[1:]}
        elif name == "language_model":
            form[name] = _language_model_form(question.language_model, serving)
        else:
            form[name] = getattr(question, name)
        if name == "top":
            form["serving"] = None if serving is None else _serving_form(serving)
        if name == "bill":
            form["traffic"] = goal.traffic if isinstance(goal, FleetGoal) else None
    return form


def _serving_form(goal: ServingGoal) -> dict[str, Any]:
    return {
        "qps": goal.qps,
        "slo_ms": [[quantile, ms] for quantile, ms in goal.slo.items()],
        "max_wait_ms": goal.max_wait_ms,
        "headroom": goal.headroom,
        "spot_overprovision": goal.spot_overprovision,
        "max_batch": goal.max_batch,
    }


def _language_model_form(settings: LanguageModelSettings | None, goal: ServingGoal | None) -> Any:
    if settings is None:
        return None
    form: dict[str, Any] = {}
    for item in dataclasses.fields(settings):
        form[item.name] = getattr(settings, item.name)
        if item.name == _TOKEN_LATENCIES_AFTER:
            form |= {
                key: None if goal is None else goal.limit_ms(metric)
                for metric, key in TOKEN_LATENCIES.items()
            }
    return form


def goal_payload(data: dict[str, Any]) -> tuple[type[Goal], dict[str, Any]]:
    """The goal a question's JSON (as :func:`upgrade_legacy_payload` gives it) holds, as the type to
    build and its fields; its keys are taken out of ``data``. A ValueError when it holds none."""
    flat = {key: data.pop(key) for key in GOAL_KEYS if key in data}
    kind, serving, traffic = flat.get("kind", "train"), flat.get("serving"), flat.get("traffic")
    if traffic is None and kind == "train":
        return TrainingGoal, {key: flat[key] for key in TRAINING_KEYS if key in flat}
    if kind not in ("train", "inference"):
        raise ValueError(f"question.kind is {kind!r}, not one of train, inference")
    if not isinstance(serving, Mapping):
        raise ValueError("a serving question without its rate (question.serving)")
    goal = {key: value for key, value in serving.items() if key != "slo_ms"}
    objectives = [{"metric": "latency", "quantile": q, "ms": ms} for q, ms in serving.get("slo_ms") or ()]
    settings = data.get("language_model")
    if isinstance(settings, Mapping):
        for metric, key in TOKEN_LATENCIES.items():
            if settings.get(key) is not None:
                objectives.append({"metric": metric, "quantile": TOKEN_LATENCY_QUANTILE, "ms": settings[key]})
    goal["objectives"] = objectives
    if "objective" in flat:
        goal["objective"] = flat["objective"]
    if traffic is None:
        return ServingGoal, goal
    return FleetGoal, {"serving": goal, "traffic": traffic}


def upgrade_legacy_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A stored question's JSON with its old ``options`` dictionary spread into today's fields."""
    data = {k: v for k, v in payload.items() if k != "options"}
    if data.get("family") is None and (
        data.get("language_model") is not None or data.get("objective") == TOKEN_SERVING_OBJECTIVE
    ):
        data["family"] = "language-model"
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
