"""Rank a priced candidate table: objective, best region per shape, Pareto front, ties, why.

:func:`select_candidates` is a pure function of the table from
:func:`~perdollar.select.constraints.mark_constraints` and the :class:`Question`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.catalog.price_age import age_sentence
from perdollar.catalog.price_outliers import IMPLAUSIBLE_PRICE_FLAGS, OUTLIER_SENTENCE
from perdollar.goals import training_goal
from perdollar.price.frame import target_of
from perdollar.price.model import Estimate
from perdollar.price.network_serving import plausibly_priced
from perdollar.price.spot_prices import spot_band_sentence
from perdollar.question import Question
from perdollar.select import constraints as cand
from perdollar.select.binding import nothing_feasible_error
from perdollar.select.estimates import estimates_from_frame
from perdollar.select.explain import explain
from perdollar.select.model import Recommendation
from perdollar.select.objectives import near_ties, parse_weights, rank_order, scores
from perdollar.select.pareto import pareto_mask

DEFAULT_KEEP = 40  # feasible candidates kept in a Recommendation (plus the Pareto front)
DEFAULT_KEEP_EXCLUDED = 60
SHAPE = ["cloud", "instance_type", "market", "nodes"]


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of ranking a priced table (DataFrames; the Recommendation is built from it)."""

    ranked: pd.DataFrame  # feasible, best region per shape, best first, with a "score" column
    excluded: pd.DataFrame  # excluded, one row per shape, closest to feasible first
    pareto: tuple[int, ...]  # positions in ``ranked``
    ties: np.ndarray  # bool per ``ranked`` row: ties with row 0
    explanation: str
    score_unit: str
    sample_unit: str = "samples"


def select_candidates(
    priced: pd.DataFrame,
    question: Question,
    *,
    sample_unit: str = "samples",
    keep: int = DEFAULT_KEEP,
    keep_excluded: int = DEFAULT_KEEP_EXCLUDED,
    memory_needed_gib: float | None = None,
) -> Selection:
    """Rank ``priced`` (from :func:`constraints.mark_constraints`) for ``question``.

    Raises :class:`~perdollar.errors.NothingFeasibleError` naming the binding constraint when no
    candidate survives.
    """
    target = target_of(question)
    goal = training_goal(question.goal)
    confidence = goal.confidence
    feasible = (priced["reason"] == cand.OK).to_numpy()
    if not feasible.any():
        limit = "--max-accelerators" if question.max_accelerators is not None else "--max-nodes"
        raise nothing_feasible_error(
            priced, target, confidence, memory_needed_gib=memory_needed_gib, size_limit=limit
        )
    weights = parse_weights(goal.weights)
    score = scores(
        priced, goal.objective, has_target=bool(target.samples), weights=weights, feasible=feasible
    )
    order = rank_order(score.value, feasible, priced["price_per_hour"].to_numpy(dtype=np.float64))
    # A price flagged implausible (a source's placeholder, a typo) would win on a number nobody
    # will be billed: such rows rank after every plausible one, still shown with their flag.
    flagged = _outlier_priced(priced)
    order = np.concatenate([order[~flagged[order]], order[flagged[order]]])
    # One row per shape (cloud, instance type, market, nodes): its best region. Other regions
    # with the same figures would only repeat it. Done on integer codes; only the chosen rows of
    # the wide table are copied.
    shape_code = _shape_codes(priced)
    feasible_order = order[feasible[order]]
    excluded_order = order[~feasible[order]]
    scored = priced.assign(score=score.value, score_low=score.low, score_high=score.high)
    ranked_all = scored.iloc[_first_per_shape(feasible_order, shape_code)].reset_index(drop=True)

    time_axis, cost_axis = _axes(ranked_all, bool(target.samples))
    front = pareto_mask(time_axis, cost_axis)
    keep_mask = np.zeros(len(ranked_all), dtype=bool)
    keep_mask[:keep] = True
    keep_mask |= front
    keep_mask[int(np.nanargmin(time_axis))] = True
    keep_mask[int(np.nanargmin(cost_axis))] = True
    ranked = ranked_all.loc[keep_mask].reset_index(drop=True)
    time_kept, cost_kept = _axes(ranked, bool(target.samples))
    pareto_positions = np.flatnonzero(pareto_mask(time_kept, cost_kept))
    pareto = tuple(int(i) for i in pareto_positions[np.argsort(time_kept[pareto_positions], kind="stable")])

    values = ranked["score"].to_numpy(dtype=np.float64)
    ties = near_ties(
        ranked,
        values,
        ranked["score_low"].to_numpy(dtype=np.float64),
        ranked["score_high"].to_numpy(dtype=np.float64),
    )
    explanation = explain(ranked, ties, goal.objective, target, sample_unit, values, pool=ranked_all)
    explanation = _outliers_sentence(explanation, ranked_all)

    excluded_rows = _shown_exclusions(
        priced, _representative_exclusions(priced, excluded_order, shape_code), keep_excluded
    )
    excluded = scored.iloc[excluded_rows].reset_index(drop=True)
    excluded = excluded.assign(
        excluded_text=[cand.reason_text(row, target, confidence) for _, row in excluded.iterrows()]
    )
    return Selection(ranked, excluded, pareto, ties, explanation, score.unit, sample_unit)


def _outlier_priced(frame: pd.DataFrame) -> np.ndarray:
    return ~plausibly_priced(frame).to_numpy(dtype=bool)


def _outliers_sentence(explanation: str, ranked_all: pd.DataFrame) -> str:
    flagged = _outlier_priced(ranked_all)
    if not flagged.any() or flagged[0]:
        return explanation  # none, or nothing else: the top choice's own sentence says it
    first = ranked_all.iloc[int(np.flatnonzero(flagged)[0])]
    where = f"{first['cloud']} {first['region']}" if "region" in ranked_all else str(first["cloud"])
    return (
        f"{explanation}\n{int(flagged.sum())} candidate(s) at prices flagged "
        f"{' or '.join(IMPLAUSIBLE_PRICE_FLAGS)} are ranked after the rest, "
        f"e.g. {first['instance_type']} {first['market']} ({where}) "
        "(`perdollar catalog flags`); confirm such a price with the provider before choosing it."
    ).strip()


def _shape_codes(frame: pd.DataFrame) -> np.ndarray:
    """One integer per (cloud, instance type, market, nodes)."""
    return _codes(frame, SHAPE)


# Order in which excluded candidates are listed: the near-misses a user asks about first.
_EXCLUSION_ORDER = (
    cand.REASON_DEADLINE,
    cand.REASON_BUDGET,
    cand.REASON_FIT,
    cand.REASON_NO_SPOT,
    cand.REASON_STACK,
    cand.REASON_NO_PRICE,
    cand.REASON_NO_THROUGHPUT,
)


def _representative_exclusions(priced: pd.DataFrame, rows: np.ndarray, shape_code: np.ndarray) -> np.ndarray:
    """One excluded row per shape for constraint misses; one per chip and reason for hard reasons
    (a chip that cannot run the workload says so once, not for every machine, node count and
    market, so that one reason's many machines never hide another reason's chips)."""
    reasons = priced["reason"].to_numpy()
    soft = np.isin(reasons, [cand.REASON_DEADLINE, cand.REASON_BUDGET])
    instance_code = _codes(priced, ["accelerator_key", "reason"])
    key = np.where(soft, shape_code, -1 - instance_code)
    _, first = np.unique(key[rows], return_index=True)
    chosen = rows[np.sort(first)]
    rank = {reason: index for index, reason in enumerate(_EXCLUSION_ORDER)}
    group = np.array([rank.get(r, len(rank)) for r in reasons[chosen]], dtype=np.int64)
    # Within the deadline misses, the likeliest to make it first; within budget misses, the cheapest.
    closeness = np.where(
        reasons[chosen] == cand.REASON_DEADLINE,
        -np.nan_to_num(priced["p_meet_deadline"].to_numpy(dtype=np.float64)[chosen]),
        np.where(
            reasons[chosen] == cand.REASON_BUDGET,
            priced["expected_cost_usd"].to_numpy(dtype=np.float64)[chosen],
            0.0,
        ),
    )
    return chosen[np.lexsort((closeness, group))]


# Hard reasons (does not fit, cannot run) keep this many rows of the shown exclusions, so that a long
# list of near-misses never hides why whole kinds of machine are out.
_HARD_EXCLUSIONS_KEPT = 30


def _shown_exclusions(priced: pd.DataFrame, rows: np.ndarray, keep: int) -> np.ndarray:
    """The first ``keep`` of ``rows`` (near-misses first), keeping room for the hard reasons."""
    reasons = priced["reason"].to_numpy()[rows]
    soft = np.isin(reasons, [cand.REASON_DEADLINE, cand.REASON_BUDGET])
    hard = rows[~soft]
    # A chip the workload cannot run on says why in its own words (a stack, a dtype): each its own kind.
    texts = priced["excluded_reason"].astype(str).to_numpy() if "excluded_reason" in priced else None
    hard_reasons = np.array(
        [f"{r}:{texts[i]}" if r == cand.REASON_STACK and texts is not None else r
         for r, i in zip(reasons[~soft], hard, strict=True)],
        dtype=object,
    )  # fmt: skip
    # Round-robin over the hard reasons: the first chip of every reason before the second of any.
    turn = np.zeros(len(hard), dtype=np.int64)
    for reason in set(hard_reasons):
        mine = hard_reasons == reason
        turn[mine] = np.arange(int(mine.sum()))
    hard_rows = hard[np.argsort(turn, kind="stable")][: min(_HARD_EXCLUSIONS_KEPT, keep)]
    soft_rows = rows[soft][: keep - len(hard_rows)]
    return np.concatenate([soft_rows, hard_rows])


def _codes(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    code = np.zeros(len(frame), dtype=np.int64)
    for column in columns:
        values, uniques = pd.factorize(frame[column])
        code = code * (len(uniques) + 1) + values
    return code


def _first_per_shape(rows: np.ndarray, shape_code: np.ndarray) -> np.ndarray:
    """The first of ``rows`` (already in rank order) for each shape, keeping rank order."""
    _, first = np.unique(shape_code[rows], return_index=True)
    return rows[np.sort(first)]


def _axes(frame: pd.DataFrame, has_target: bool) -> tuple[np.ndarray, np.ndarray]:
    """Time and cost to minimise: to the target, or per sample when there is none."""
    if has_target:
        return (
            frame["expected_time_hours"].to_numpy(dtype=np.float64),
            frame["expected_cost_usd"].to_numpy(dtype=np.float64),
        )
    rate = frame["effective_samples_per_second"].to_numpy(dtype=np.float64)
    per_dollar = frame["effective_samples_per_dollar"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore"):
        return 1.0 / rate, 1.0 / per_dollar


def build_recommendation(
    question: Question,
    selection: Selection,
    *,
    catalog_captured_at: str,
    catalog_snapshot_id: str,
    notes: tuple[str, ...] = (),
) -> Recommendation:
    target = target_of(question)
    feasible = estimates_from_frame(selection.ranked, target)
    excluded = estimates_from_frame(
        selection.excluded, target, reasons=selection.excluded["excluded_text"].tolist()
    )
    created_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    explanation = with_price_sentences(selection.explanation, feasible, created_at)
    return Recommendation(
        question=question,
        estimates=tuple(feasible) + tuple(excluded),
        pareto=selection.pareto,
        explanation=explanation,
        catalog_captured_at=catalog_captured_at,
        catalog_snapshot_id=catalog_snapshot_id,
        created_at=created_at,
        ties=tuple(int(i) for i in np.flatnonzero(selection.ties)),
        notes=notes,
        sample_unit=selection.sample_unit,
    )


def with_price_sentences(explanation: str, ranked: Sequence[Estimate], created_at: str) -> str:
    """``explanation`` with how old the top choice's price is and, where it is, that it is an
    outlier: a snapshot mixes prices of different ages, so every answer dates its top price."""
    feasible = [e for e in ranked if e.feasible]
    if feasible and feasible[0].captured_at:
        explanation = f"{explanation}\n{age_sentence(feasible[0].captured_at, created_at)}".strip()
    if feasible and (band := spot_band_sentence(feasible[0])):
        explanation = f"{explanation}\n{band}"
    if feasible and set(IMPLAUSIBLE_PRICE_FLAGS) & set(feasible[0].flags):
        explanation = f"{explanation}\n{OUTLIER_SENTENCE}"
    return explanation
