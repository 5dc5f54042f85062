"""Side by side: a shortlist of configurations, priced the same way as ``recommend``.

A configuration is written in the one grammar of :mod:`perdollar.configuration`: the label the
tables print (``"2x g5.12xlarge spot (aws us-east-1)"``) or a shorthand such as ``"4x g5.2xlarge
spot"``, ``"gcp:a2-highgpu-1g @us-central1"`` or ``"1x ml.g5.12xlarge"``; on-demand unless a
market is named, in the cheapest region unless one is.
Ratios are reported hyperfine style with an uncertainty from the prediction bands (and, on spot,
from the interruption bucket's width).
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.configuration import Configuration, parse_configuration
from perdollar.errors import NothingFeasibleError, PerdollarError
from perdollar.fmt import format_money, format_ratio, singular
from perdollar.price.frame import BAND_Z, SpotAssumptions, Target, price_frame, throughput_log_sd
from perdollar.price.model import Estimate
from perdollar.price.spot import BUCKET_MONTHLY_FRACTION, UNKNOWN_MONTHLY_FRACTION
from perdollar.select import constraints as cand
from perdollar.select.display import estimates_frame, estimates_html
from perdollar.select.estimates import estimates_from_frame

SAME_CHIP_CORRELATION = 0.8


@dataclass(frozen=True, slots=True)
class Ratio:
    """How ``estimate`` compares with the best one on cost per sample and on speed."""

    label: str
    cost_ratio: float  # > 1: the best is this many times cheaper per sample
    cost_ratio_sd: float
    speed_ratio: float  # > 1: the best is this many times faster
    speed_ratio_sd: float
    reasons: str


@dataclass(frozen=True, slots=True, repr=False)
class Comparison:
    labels: tuple[str, ...]
    estimates: tuple[Estimate, ...]  # in the order given
    best: int  # index of the cheapest per sample (after spot losses)
    ratios: tuple[Ratio, ...]  # every other configuration against the best
    summary: str
    sample_unit: str = "samples"

    def to_frame(self) -> pd.DataFrame:
        """One row per configuration in the order given, with its ratios against the best."""
        frame = estimates_frame(self.estimates, self.sample_unit)
        frame.insert(0, "given_as", list(self.labels))
        ratios = {ratio.label: ratio for ratio in self.ratios}
        frame["best"] = [i == self.best for i in range(len(self.labels))]
        frame["times_dearer_than_best"] = [
            ratios[label].cost_ratio if label in ratios else (1.0 if i == self.best else None)
            for i, label in enumerate(self.labels)
        ]
        frame["times_slower_than_best"] = [
            ratios[label].speed_ratio if label in ratios else (1.0 if i == self.best else None)
            for i, label in enumerate(self.labels)
        ]
        return frame

    def __repr__(self) -> str:
        return f"Comparison of {len(self.labels)} configurations\n{self.summary}"

    def _repr_html_(self) -> str:
        body = estimates_html(self.to_frame(), "perdollar comparison")
        summary = html.escape(self.summary)
        return f"{body}<pre>{summary}</pre>"


def configuration_for_comparison(text: str, *, plans: bool = False) -> tuple[str, Configuration]:
    """The text as written (what the table shows) and its configuration, on-demand unless named.

    ``plans``: the workload runs under a plan (a language model), so a label may name one.
    """
    configuration = parse_configuration(text)
    if configuration.plan and not plans:
        raise PerdollarError(
            f"{configuration.label!r}: this workload has no plans to apply (only language models do)",
            f"drop ' with {configuration.plan}'",
        )
    market = configuration.market or "on-demand"
    return " ".join(text.split()), dataclasses.replace(configuration, market=market)


def _spot_log_sd(row: pd.Series, assumptions: SpotAssumptions, target: Target) -> float:
    """Log sd of the spot overhead from the width of the interruption bucket."""
    if row["market"] != "spot" or assumptions.interruption_fraction is not None:
        return 0.0
    bucket = row.get("interruption_bucket")
    _, low, high = (
        BUCKET_MONTHLY_FRACTION.get(bucket, UNKNOWN_MONTHLY_FRACTION)
        if isinstance(bucket, str)
        else UNKNOWN_MONTHLY_FRACTION
    )
    frames = [
        price_frame(pd.DataFrame([row]), target, dataclasses.replace(assumptions, interruption_fraction=f))
        for f in (low, high)
    ]
    overheads = [float(f.iloc[0]["spot_overhead"]) for f in frames]
    return abs(math.log(overheads[1] / overheads[0])) / (2 * BAND_Z)


def _throughput_log_sd(row: pd.Series) -> float:
    """The same (slow-side) spread that prices P(deadline)."""
    values = [
        np.array([float(row[c])])
        for c in ("samples_per_second_low", "samples_per_second", "samples_per_second_high")
    ]
    return float(throughput_log_sd(*values)[0])


def _bound(row: pd.Series) -> str:
    """``compute-bound`` or ``communication-bound: all-reduce 41% of the step at 25 Gbps``."""
    text = f"{row['bottleneck']}-bound"
    step, exposed = float(row.get("step_time_s") or 0.0), float(row.get("communication_time_s") or 0.0)
    if step > 0 and exposed / step >= 0.05:
        link = (
            f" at {float(row['network_gbps']):g} Gbps"
            if int(row["nodes"]) > 1 and row["network_gbps"] > 0
            else ""
        )
        text += f": all-reduce {exposed / step:.0%} of the step{link}"
    return text


def _reasons(best: pd.Series, other: pd.Series) -> str:
    """Why ``best`` wins: price, throughput (with what bounds each) and spot losses, as ratios."""
    price = best["price_per_hour"] / other["price_per_hour"]
    speed = best["samples_per_second"] / other["samples_per_second"]
    parts = [
        f"price {price:.2f}× ({format_money(best['price_per_hour'])}/h vs "
        f"{format_money(other['price_per_hour'])}/h)",
        f"throughput {speed:.2f}× ({_bound(best)} vs {_bound(other)})",
    ]
    if abs(other["spot_overhead"] / best["spot_overhead"] - 1.0) > 0.0005:
        mine, theirs = (best["spot_overhead"] - 1) * 100, (other["spot_overhead"] - 1) * 100
        parts.append(f"spot losses {mine:.2g}% vs {theirs:.2g}%")
    return "; ".join(parts)


def _ratio_log_sd(best: pd.Series, other: pd.Series, best_sd: float, other_sd: float) -> float:
    """Log-sd of a throughput ratio.

    The same shape of the same chip shares its whole prediction: no throughput uncertainty in
    the ratio. The same chip in another shape (nodes, host) shares the chip's efficiency, the
    bulk of the error (correlation 0.8, an assumption); different chips are independent.
    """
    if best.get("accelerator_key") != other.get("accelerator_key"):
        return math.hypot(best_sd, other_sd)
    same_shape = (best["instance_type"], best["nodes"]) == (other["instance_type"], other["nodes"])
    if same_shape:
        return 0.0
    variance = best_sd**2 + other_sd**2 - 2 * SAME_CHIP_CORRELATION * best_sd * other_sd
    return math.sqrt(max(variance, 0.0))


def compare_priced(
    frame: pd.DataFrame,
    texts: Sequence[str],
    target: Target,
    assumptions: SpotAssumptions,
    unit: str = "samples",
) -> Comparison:
    """Ratios against the cheapest per sample, from one priced, constraint-marked row per configuration.

    ``unit`` is the workload's plural unit (``images``, ``tokens``): the summary says "per token".
    """
    usable = (frame["reason"].isin([cand.OK, cand.REASON_DEADLINE, cand.REASON_BUDGET])).to_numpy()
    if not usable.any():
        why = "; ".join(
            f"{text}: {cand.reason_text(row, target, 0.9)}"
            for text, (_, row) in zip(texts, frame.iterrows(), strict=True)
        )
        raise NothingFeasibleError(
            f"none of the configurations can run this workload ({why})",
            "pick instances whose accelerators fit it (perdollar recommend lists them)",
        )
    per_dollar = np.where(usable, frame["effective_samples_per_dollar"].to_numpy(dtype=np.float64), -np.inf)
    best = int(np.argmax(per_dollar))
    top = frame.iloc[best]
    log_sd = [_throughput_log_sd(r) for _, r in frame.iterrows()]
    spot_sd = [_spot_log_sd(r, assumptions, target) for _, r in frame.iterrows()]
    ratios: list[Ratio] = []
    for index, row in frame.iterrows():
        i = int(index)
        if i == best or not usable[i]:
            continue
        throughput_sd = _ratio_log_sd(top, row, log_sd[best], log_sd[i])
        cost_sd = math.hypot(throughput_sd, spot_sd[i], spot_sd[best])
        cost_ratio = float(top["effective_samples_per_dollar"] / row["effective_samples_per_dollar"])
        speed_ratio = float(top["effective_samples_per_second"] / row["effective_samples_per_second"])
        ratios.append(
            Ratio(
                label=texts[i],
                cost_ratio=cost_ratio,
                cost_ratio_sd=cost_ratio * cost_sd,
                speed_ratio=speed_ratio,
                speed_ratio_sd=speed_ratio * math.hypot(throughput_sd, spot_sd[i]),
                reasons=_reasons(top, row),
            )
        )
    lines = [texts[best]]
    for ratio in ratios:
        lines.append(
            "  "
            + format_ratio(ratio.cost_ratio, ratio.cost_ratio_sd, "cheaper", "dearer", ratio.label)
            + f" per {singular(unit)}"
        )
        speed = (
            "about as fast as it"
            if abs(ratio.speed_ratio - 1.0) < 0.01
            else format_ratio(ratio.speed_ratio, ratio.speed_ratio_sd, "faster", "slower", "it")
        )
        lines.append(f"    and {speed} — {ratio.reasons}")
    unusable = [texts[i] for i in range(len(texts)) if not usable[i]]
    for text, (_, row) in zip(unusable, frame.loc[~usable].iterrows(), strict=True):
        lines.append(f"  {text} cannot run: {cand.reason_text(row, target, 0.9)}")
    reasons = [
        cand.reason_text(r, target, 0.9) if not usable[i] else "" for i, (_, r) in enumerate(frame.iterrows())
    ]
    estimates = estimates_from_frame(frame, target, reasons=reasons)
    return Comparison(
        labels=tuple(texts),
        estimates=tuple(estimates),
        best=best,
        ratios=tuple(ratios),
        summary="\n".join(lines),
        sample_unit=unit,
    )
