"""Dataclasses ↔ JSON payloads for the store.

Rows keep a few indexed columns for querying and the full object as a JSON payload; these
functions turn the vocabulary's frozen dataclasses into plain JSON and back. Reading tolerates
payloads written by an older or newer perdollar: unknown keys are dropped, missing ones take
the dataclass default.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

from perdollar.goals import FleetGoal, Goal, ServingGoal
from perdollar.jsonable import JsonObject, JsonValue
from perdollar.jsonable import to_jsonable as to_plain
from perdollar.measure.result import Measurement
from perdollar.measure.serialize import measurement_from_dict, measurement_to_dict
from perdollar.question import Question
from perdollar.question_json import goal_payload, upgrade_legacy_payload

if TYPE_CHECKING:  # importing the select stage pulls in pandas; writers of measurements never need it
    from _typeshed import DataclassInstance

    from perdollar.price.model import Estimate
    from perdollar.select.model import Recommendation

T = TypeVar("T")


def dumps(value: object) -> str:
    return json.dumps(to_plain(value), allow_nan=False, sort_keys=True)


def build(cls: type[T], data: Mapping[str, object], **overrides: object) -> T:
    """``cls(**data)`` keeping only the fields ``cls`` has (old/new payloads stay readable),
    turning JSON lists back into tuples and nested dicts back into dataclasses by the field types."""
    hints = _hints(cls)
    kwargs: dict[str, object] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in overrides:
            kwargs[f.name] = overrides[f.name]
        elif f.name in data:
            kwargs[f.name] = _decode(hints.get(f.name, object), data[f.name])
    return cls(**kwargs)


# Each field's declared type, as ``typing.get_type_hints`` gives it (a class or a typing form).
_HINTS: dict[type, dict[str, object]] = {}


def _hints(cls: type) -> dict[str, object]:
    # A dict, not functools.cache: typeshed's cache takes Hashable arguments, and mypy sees no class as one.
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _decode(hint: object, value: object) -> object:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _decode(options[0], value) if len(options) == 1 else value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(value, dict):
        return build(hint, value)
    if origin is tuple and isinstance(value, list):
        args = typing.get_args(hint)
        element = args[0] if len(args) == 2 and args[1] is Ellipsis else object
        return tuple(_decode(element, v) for v in value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def mistyped(value: DataclassInstance, where: str = "") -> str | None:
    """The first field of a rebuilt dataclass (``value``, nested ones included) whose value is not
    of the type its field declares, said in a few words; None when every one is.

    :func:`build` keeps what a payload holds, so that old payloads stay readable; what reads a row
    back for use asks this before trusting it (a text where a number belongs). A missing value
    (``None``) is left to the checks of the setting it belongs to.
    """
    hints = _hints(type(value))
    for item in dataclasses.fields(value):
        problem = _wrong_type(hints.get(item.name, object), getattr(value, item.name), f"{where}{item.name}")
        if problem:
            return problem
    return None


def _wrong_type(hint: object, value: object, name: str) -> str | None:
    # An undeclared field (``object``) or one typed as anything at all gets no check: get_origin
    # finds no form in either and neither is a class checked below.
    if value is None:
        return None
    shown = repr(value)[:40]
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _wrong_type(options[0], value, name) if len(options) == 1 else None
    if origin is typing.Literal:
        allowed = typing.get_args(hint)
        return None if value in allowed else f"{name} is {shown}, not one of {', '.join(map(str, allowed))}"
    if dataclasses.is_dataclass(hint):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return mistyped(value, f"{name}.")
        return f"{name} is {shown}"
    if origin is tuple:
        if not isinstance(value, tuple | list):
            return f"{name} is {shown}, not a list"
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            elements = [args[0]] * len(value)
        elif len(args) != len(value):
            return f"{name} is {shown}, not {len(args)} values"
        else:
            elements = list(args)
        pairs = enumerate(zip(elements, value, strict=True))
        found = (_wrong_type(h, v, f"{name}[{i}]") for i, (h, v) in pairs)
        return next((problem for problem in found if problem), None)
    if hint is bool:
        return None if isinstance(value, bool) else f"{name} is {shown}, not true or false"
    if hint is float or hint is int:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (hint is int and not isinstance(value, int)):
            return f"{name} is {shown}, not {'a number' if hint is float else 'a whole number'}"
        return None
    if hint is str:
        return None if isinstance(value, str) else f"{name} is {shown}, not a text"
    return None


def mistyped_goal(goal: Goal) -> str | None:
    """:func:`mistyped` for a question's goal, each field named where the question's JSON keeps it
    (:mod:`perdollar.question_json`): a training goal's at the top, a deployment's under ``serving``."""
    if isinstance(goal, FleetGoal):
        return mistyped(goal.serving, "question.serving.") or mistyped(goal.traffic, "question.traffic.")
    return mistyped(goal, "question.serving." if isinstance(goal, ServingGoal) else "question.")


# --- readers of stored documents ---------------------------------------------------------


def _object(value: JsonValue, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise TypeError(f"the stored {what} is {type(value).__name__}, not an object")
    return value


def _listed(value: JsonValue | tuple[()], what: str) -> list[JsonValue] | tuple[()]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"{what} is {type(value).__name__}, not a list")
    return value


def _number(value: JsonValue, what: str) -> float:
    if isinstance(value, list | dict) or value is None:
        raise TypeError(f"{what} is {type(value).__name__}, not a number")
    return float(value)


# --- measurements -------------------------------------------------------------------------


def measurement_to_payload(measurement: Measurement) -> JsonValue:
    return to_plain(measurement_to_dict(measurement))


def measurement_from_payload(payload: JsonValue) -> Measurement:
    return measurement_from_dict(_object(payload, "measurement"))


# --- recommendations ----------------------------------------------------------------------


def recommendation_to_payload(recommendation: Recommendation) -> JsonObject:
    return to_plain(recommendation)


def question_from_payload(payload: JsonValue) -> Question:
    """A stored question, those of earlier versions (a free ``options`` dictionary) included."""
    data = upgrade_legacy_payload(_object(payload, "question"))
    goal_type, goal = goal_payload(data)
    return build(Question, data, goal=build(goal_type, goal))


def _estimate_from_payload(document: JsonValue) -> Estimate:
    from perdollar.price.model import Estimate

    payload = _object(document, "estimate")
    # JSON has no NaN/inf: they were written as null; a missing rate reads back as NaN so that
    # arithmetic on it stays honest rather than raising.
    numbers = {
        name: (math.nan if payload.get(name) is None else _number(payload[name], name))
        for name in (
            "samples_per_second",
            "samples_per_second_low",
            "samples_per_second_high",
            "price_per_hour",
            "samples_per_dollar",
        )
    }
    from perdollar.price.model import ServingFigures

    serving = payload.get("serving")
    figures = ServingFigures.from_payload(serving) if isinstance(serving, dict) else None
    return build(Estimate, payload, serving=figures, **numbers)


def recommendation_from_payload(document: JsonValue) -> Recommendation:
    from perdollar.select.model import Recommendation

    payload = _object(document, "recommendation")
    estimates = payload.get("estimates") or ()
    return build(
        Recommendation,
        payload,
        question=question_from_payload(payload.get("question") or {}),
        estimates=tuple(_estimate_from_payload(e) for e in _listed(estimates, "estimates")),
    )


def top_choice(recommendation: Recommendation) -> Estimate | None:
    """The best feasible estimate (estimates are ranked; excluded ones come last)."""
    return next((e for e in recommendation.estimates if e.feasible), None)


def headline(recommendation: Recommendation) -> str | None:
    """What the history lists as the answer: the top choice, or a fleet's parts and monthly cost."""
    fleet = recommendation.fleet
    if fleet is not None:
        chosen = fleet.get("fleet") or {}
        parts = " + ".join(chosen.get("parts") or ())
        return f"fleet of {parts}, ${chosen.get('usd_per_month') or 0:,.0f}/month"
    top = top_choice(recommendation)
    return top.label if top else None
