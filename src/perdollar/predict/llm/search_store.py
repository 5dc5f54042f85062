"""Plan searches kept in the cache folder (:mod:`perdollar.cache`), so asking the same question
again skips them.

One JSON file per search context (the model's architecture and shape, its training settings, the
efficiency it is predicted with and any fixed plan) under ``llm-plans/``; inside, one outcome per
cluster (accelerator, GPUs per host, hosts, network). The file's name is also keyed by perdollar's
version, the installed torch and transformers (which traced the layers) and a digest of the code
and data that predict, so an edited model or refitted parameters never serve an earlier answer.
Floats go through JSON unchanged, so a kept outcome is the computed one to the last bit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from perdollar import cache
from perdollar.files import installed_version
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.llm.planner import PlanSearch
from perdollar.predict.llm.stage import LLMEfficiency
from perdollar.predict.llm.step import LLMTrainingPrediction
from perdollar.workload.llm.workload import LLMWorkload

_SCHEMA = 1
KIND = "llm-plans"
# Every part of the package that shapes a search's outcome: the predictors and their fitted data,
# the traced layers (shipped and the tracer) and the models' architectures.
_CODE = ("predict", "profile", "workload", "catalog")


def _digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=repr).encode()).hexdigest()[:24]


class KeptSearches:
    """The kept outcomes of one search context: read once, written back when a search was added."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._outcomes: dict[str, object] = _read(path) if path is not None else {}
        self._added = False

    def get(self, cluster: tuple[object, ...]) -> PlanSearch | None:
        kept = self._outcomes.get(_digest(repr(cluster)))
        if kept is None:
            return None
        with contextlib.suppress(TypeError, KeyError, ValueError):
            return _search_from_dict(kept)
        return None  # written by another layout of these classes: searched again and replaced

    def put(self, cluster: tuple[object, ...], search: PlanSearch) -> None:
        self._outcomes[_digest(repr(cluster))] = _search_to_dict(search)
        self._added = True

    def save(self) -> None:
        if self._added and self._path is not None:
            cache.write_json(self._path, self._outcomes)
            self._added = False


def kept_searches(
    workload: LLMWorkload, plan: TrainingPlan | None, efficiency: LLMEfficiency | None
) -> KeptSearches:
    """The kept searches of ``workload`` under ``efficiency`` (and ``plan`` when it is fixed)."""
    context = {
        "schema": _SCHEMA,
        "torch": installed_version("torch"),
        "transformers": installed_version("transformers"),
        "workload": repr(workload),
        "plan": repr(plan),
        "efficiency": repr(efficiency),
    }
    return KeptSearches(cache.entry_path(KIND, cache.entry_key(context, _CODE)))


def _read(path: Path) -> dict[str, object]:
    document = cache.read_json(path)  # not kept yet, or damaged: searched again
    return document if isinstance(document, dict) else {}


def _search_to_dict(search: PlanSearch) -> dict[str, object]:
    return {
        "best": _prediction_to_dict(search.best),
        "nearest_miss": _prediction_to_dict(search.nearest_miss),
        "evaluated": search.evaluated,
        "problem": search.problem,
    }


def _search_from_dict(kept: object) -> PlanSearch:
    """The kept search; a TypeError, KeyError or ValueError where the file no longer reads as one."""
    if not isinstance(kept, Mapping):
        raise TypeError("a kept search is an object")
    evaluated = kept["evaluated"]
    if not isinstance(evaluated, int | float | str):
        raise TypeError("a kept search counts the plans it evaluated")
    return PlanSearch(
        _prediction_from_dict(kept["best"]),
        _prediction_from_dict(kept["nearest_miss"]),
        int(evaluated),
        str(kept["problem"]),
    )


def _prediction_to_dict(prediction: LLMTrainingPrediction | None) -> dict[str, object] | None:
    if prediction is None:
        return None
    fields = {f.name: getattr(prediction, f.name) for f in dataclasses.fields(prediction)}
    return fields | {"plan": dataclasses.asdict(prediction.plan)}


def _prediction_from_dict(kept: object) -> LLMTrainingPrediction | None:
    if kept is None:
        return None
    if not isinstance(kept, dict):
        raise TypeError("a kept prediction is an object")
    # The fields as the file holds them: one missing or unknown is a TypeError, and searched again.
    return LLMTrainingPrediction(**(kept | {"plan": TrainingPlan(**kept["plan"])}))
