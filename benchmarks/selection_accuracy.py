"""Does perdollar pick the right cloud GPU? Selection accuracy on published measurements.

    python benchmarks/selection_accuracy.py [SHARED_DATA_DIR] [--in-sample] [--json]
        [--price-rule cheapest|median] [--include-latency] [--misses]

A *configuration* is a group of single-GPU rows of published_dev.csv in one source and software
era with the same model, task, precision, per-GPU batch and sequence length (the pairing key of
``perdollar.predict.published``), throughput rows only (``--include-latency`` adds the rows
published as latency), measured on at least three accelerators that the bundled catalog offers.
Each GPU is priced per GPU-hour from the catalog: the cheapest (or median) on-demand price per
accelerator over every cloud and region, from unflagged offers of whole GPUs (instance price /
accelerator count). Two questions are asked of each configuration:

* best value: which GPU gives the most samples per dollar?
* deadline: which GPU finishes a job at the lowest cost within twice the fastest GPU's time
  (throughput at least half the fastest one's)? Every policy is told the deadline.

Policies: SkyPilot's default (cheapest $/h for both questions, as if every job took one hour);
the fastest GPU on paper (highest datasheet peak for the precision); perdollar calibrated from
ONE measured anchor (every GPU of the configuration in turn, and the cheapest GPU alone), whose
deadline pick is the cheapest GPU whose band's LOW end (80% band from held-out errors, so
P(meets) ≥ 0.9) meets the deadline; the same without the band, and with a benchmark run of a GPU
whose band leaves the answer open (perdollar's sweep); perdollar spec-only (no anchor, traced
reference workloads only). By default every target GPU is predicted by a fit that never saw that
GPU (held out); ``--in-sample`` uses the shipped parameters (fitted on this whole set).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

DEADLINE_FACTOR = 2.0  # the deadline is this multiple of the fastest GPU's time
_TIE = 1e-9  # relative: picks this close to the best count as the best

Rates = Mapping[str, float]  # samples/s per GPU, by accelerator key
Prices = Mapping[str, float]  # $ per GPU-hour, by accelerator key


# --- pure decision functions -------------------------------------------------------------------


def samples_per_dollar(rate: float, price_per_hour: float) -> float:
    return rate * 3600.0 / price_per_hour


def pick_best_value(rates: Rates, prices: Prices) -> str:
    """The GPU with the most (estimated) samples per dollar; ties go to the lower price."""
    return max(sorted(rates), key=lambda k: (samples_per_dollar(rates[k], prices[k]), -prices[k]))


def pick_cheapest_per_hour(prices: Prices) -> str:
    return min(sorted(prices), key=lambda k: prices[k])


def pick_fastest_on_paper(peaks: Mapping[str, float]) -> str:
    return max(sorted(peaks), key=lambda k: peaks[k])


def pick_cheapest_meeting(rates: Rates, prices: Prices, required_rate: float) -> str | None:
    """The GPU with the lowest cost to target among those at least ``required_rate`` fast."""
    feasible = {k: r for k, r in rates.items() if r >= required_rate}
    return pick_best_value(feasible, prices) if feasible else None


def pick_for_deadline(predicted: Rates, low: Rates, prices: Prices, required_rate: float) -> str:
    """Cheapest job whose band's low end meets the deadline; else the best chance of meeting it."""
    confident = {k: predicted[k] for k in predicted if low[k] >= required_rate}
    if confident:
        return pick_best_value(confident, prices)
    return max(sorted(low), key=lambda k: low[k])


@dataclass(frozen=True)
class Outcome:
    """One decision scored against the measured truth of its configuration."""

    value_right: bool
    value_loss: float  # 1 - samples/$ of the pick / best samples/$
    deadline_met: bool
    deadline_right: bool  # met, at the lowest cost any GPU meeting it has
    cost_excess: float  # cost to target of the pick / cheapest feasible cost - 1 (< 0: cheaper but late)
    extra_measurements: int = 0  # GPUs benchmarked beyond the anchor to reach the decision


def score(
    true_rates: Rates, prices: Prices, value_pick: str, deadline_pick: str, extra_measurements: int = 0
) -> Outcome:
    spd = {k: samples_per_dollar(true_rates[k], prices[k]) for k in true_rates}
    best = max(spd.values())
    required = max(true_rates.values()) / DEADLINE_FACTOR
    cheapest = pick_cheapest_meeting(true_rates, prices, required)
    assert cheapest is not None  # the fastest GPU always meets its own deadline
    cost_excess = spd[cheapest] / spd[deadline_pick] - 1.0
    met = true_rates[deadline_pick] >= required
    return Outcome(
        value_right=spd[value_pick] >= best * (1 - _TIE),
        value_loss=1.0 - spd[value_pick] / best,
        deadline_met=met,
        deadline_right=met and cost_excess <= _TIE,
        cost_excess=cost_excess,
        extra_measurements=extra_measurements,
    )


def summarise(outcomes: Iterable[Outcome]) -> dict[str, Any]:
    items = list(outcomes)
    if not items:
        return {"n": 0}

    def share(flag: Callable[[Outcome], bool]) -> float:
        return sum(flag(o) for o in items) / len(items)

    losses, excess = [o.value_loss for o in items], [o.cost_excess for o in items]
    met_excess = [o.cost_excess for o in items if o.deadline_met]
    return {
        "n": len(items),
        "value_right": share(lambda o: o.value_right),
        "value_loss_mean": statistics.fmean(losses),
        "value_loss_median": statistics.median(losses),
        "deadline_met": share(lambda o: o.deadline_met),
        "deadline_right": share(lambda o: o.deadline_right),
        "cost_excess_mean": statistics.fmean(excess),
        "cost_excess_median": statistics.median(excess),
        "cost_excess_mean_when_met": statistics.fmean(met_excess) if met_excess else None,
        "extra_measurements_mean": statistics.fmean(o.extra_measurements for o in items),
    }


@dataclass(frozen=True)
class Band:
    """10th and 90th percentiles of log(actual/predicted): the 80% band of one basis."""

    low: float
    high: float


@dataclass(frozen=True)
class Bands:
    measured: Band
    calibrated: Band  # of a traced reference workload (what a user's own workload gets)
    spec: Band
    calibrated_fallback: Band | None = None  # of a model predicted with the fallback profile


@dataclass(frozen=True)
class Estimates:
    """What a policy believes about each GPU: a point value and its 80% band (samples/s)."""

    predicted: Rates
    low: Rates
    high: Rates


def estimates(predicted: Rates, band: Band, measured: Rates, measured_band: Band) -> Estimates:
    point = {**predicted, **measured}

    def edge(attr: str) -> dict[str, float]:
        return {
            k: v * math.exp(getattr(measured_band if k in measured else band, attr)) for k, v in point.items()
        }

    return Estimates(point, edge("low"), edge("high"))


def decide(est: Estimates, prices: Prices, required: float, use_band: bool = True) -> tuple[str, str]:
    """Best predicted samples/$; cheapest predicted to meet the deadline at the band's low end."""
    low = est.low if use_band else est.predicted
    return pick_best_value(est.predicted, prices), pick_for_deadline(est.predicted, low, prices, required)


def decide_with_sweep(
    est: Estimates, prices: Prices, required: float, measure: Callable[[str], float], measured: Iterable[str]
) -> tuple[str, str, int]:
    """As :func:`decide`, but benchmark a GPU for real when its band leaves the answer open.

    Best value: when the runner-up's band reaches the leader's, both are measured and the
    better measured one wins. Deadline: candidates in order of predicted cost; one whose band
    straddles the required rate is measured before it is accepted or passed over.
    """
    already = set(measured)
    known = {k: est.predicted[k] for k in already}

    def rate(key: str) -> float:
        if key not in known:
            known[key] = measure(key)
        return known[key]

    def spd(rates: Rates, key: str) -> float:
        return samples_per_dollar(rates[key], prices[key])

    ranked = sorted(est.predicted, key=lambda k: (-spd(est.predicted, k), k))
    first, second = ranked[:2]
    value = first
    if first in known and second in known:
        value = max((first, second), key=lambda k: spd(known, k))
    elif spd(est.high, second) >= spd(est.low, first):
        value = max((first, second), key=lambda k: samples_per_dollar(rate(k), prices[k]))
    deadline = None
    for key in ranked:
        if key in known or est.low[key] < required <= est.high[key]:
            if rate(key) >= required:
                deadline = key
                break
        elif est.low[key] >= required:
            deadline = key
            break
    if deadline is None:
        deadline = max(sorted(est.low), key=lambda k: known.get(k, est.low[k]))
    return value, deadline, len(set(known) - already)


# --- configurations and policies ---------------------------------------------------------------


@dataclass(frozen=True)
class Configuration:
    label: str
    rates: Rates  # measured samples/s per GPU (the truth)
    prices: Prices
    peaks: Mapping[str, float]  # datasheet TFLOPS for the precision
    calibrated: Mapping[str, Rates]  # anchor key → target key → predicted samples/s
    spec: Rates  # spec-only prediction (empty: no traced reference workload)


def required_rate(config: Configuration) -> float:
    """The deadline every policy is told, as a rate: half the fastest GPU's measured throughput."""
    return max(config.rates.values()) / DEADLINE_FACTOR


def anchored(config: Configuration, anchor: str, bands: Bands) -> Estimates:
    """perdollar's view after measuring only ``anchor``: calibrated predictions of the others.

    A configuration without spec predictions has no traced reference workload: its band is the
    fallback profile's, whose held-out errors are wider.
    """
    band = bands.calibrated if config.spec or bands.calibrated_fallback is None else bands.calibrated_fallback
    return estimates(config.calibrated[anchor], band, {anchor: config.rates[anchor]}, bands.measured)


def policy_outcomes(configs: list[Configuration], bands: Bands) -> dict[str, list[Outcome]]:
    """Every policy's decisions on ``configs``, scored (perdollar: one decision per anchor)."""

    def scored(c: Configuration, picks: tuple[str, str]) -> Outcome:
        return score(c.rates, c.prices, *picks)

    def every_anchor(use_band: bool) -> list[Outcome]:
        return [
            scored(c, decide(anchored(c, a, bands), c.prices, required_rate(c), use_band))
            for c in configs
            for a in sorted(c.calibrated)
        ]

    def swept(c: Configuration, anchor: str) -> Outcome:
        value, deadline, extra = decide_with_sweep(
            anchored(c, anchor, bands), c.prices, required_rate(c), c.rates.__getitem__, [anchor]
        )
        return score(c.rates, c.prices, value, deadline, extra)

    def cheapest_anchor(c: Configuration) -> Outcome:
        anchor = pick_cheapest_per_hour(c.prices)
        return scored(c, decide(anchored(c, anchor, bands), c.prices, required_rate(c)))

    def spec_only(c: Configuration) -> Outcome:
        return scored(
            c, decide(estimates(c.spec, bands.spec, {}, bands.measured), c.prices, required_rate(c))
        )

    return {
        "SkyPilot default (cheapest $/h)": [
            scored(c, (pick_cheapest_per_hour(c.prices),) * 2) for c in configs
        ],
        "fastest on paper (peak TFLOPS)": [scored(c, (pick_fastest_on_paper(c.peaks),) * 2) for c in configs],
        "perdollar calibrated, every anchor": every_anchor(use_band=True),
        "perdollar calibrated, cheapest anchor": [cheapest_anchor(c) for c in configs],
        "  every anchor, point estimate (no band)": every_anchor(use_band=False),
        "  every anchor, + benchmark when band open": [
            swept(c, a) for c in configs for a in sorted(c.calibrated)
        ],
        "perdollar spec-only (no anchor)": [spec_only(c) for c in configs if c.spec],
    }


def evaluate(configs: list[Configuration], bands: Bands) -> dict[str, dict[str, dict[str, Any]]]:
    """Summaries per policy on all configurations and on those with a traced reference workload."""
    subsets = {"all": configs, "traced reference workloads": [c for c in configs if c.spec]}
    return {
        name: {policy: summarise(o) for policy, o in policy_outcomes(subset, bands).items()}
        for name, subset in subsets.items()
    }


def misses(configs: list[Configuration], bands: Bands) -> list[dict[str, Any]]:
    """perdollar's wrong best-value picks (every anchor): where the predictor ranks GPUs wrongly."""
    out = []
    for c in configs:
        for anchor in sorted(c.calibrated):
            est = anchored(c, anchor, bands)
            picked = pick_best_value(est.predicted, c.prices)
            outcome = score(c.rates, c.prices, picked, picked)
            if outcome.value_right:
                continue
            best = pick_best_value(c.rates, c.prices)
            out.append(
                {
                    "configuration": c.label,
                    "anchor": anchor,
                    "best": best,
                    "picked": picked,
                    "samples_per_dollar_lost": outcome.value_loss,
                    "picked_predicted_over_measured": est.predicted[picked] / c.rates[picked],
                    "best_predicted_over_measured": est.predicted[best] / c.rates[best],
                }
            )
    return out


def gpu_hour_prices(offers: pd.DataFrame, rule: str = "cheapest") -> dict[str, float]:
    """$ per GPU-hour per accelerator: on-demand, unflagged, whole-GPU offers; min or median."""
    usable = offers[
        (offers["market"] == "on-demand")
        & (offers["flags"].map(len) == 0)
        & (offers["accelerator_count"] >= 1)
        & offers["accelerator_key"].notna()
        & (offers["price_per_hour"] > 0)
    ]
    per_gpu = (usable["price_per_hour"] / usable["accelerator_count"]).groupby(usable["accelerator_key"])
    return (per_gpu.min() if rule == "cheapest" else per_gpu.median()).to_dict()


_PEAK_DTYPE = {"amp": "fp16", "fp16": "fp16", "f16": "fp16", "bf16": "bf16", "tf32": "tf32", "fp8": "fp8"}


def paper_peak(accelerator: Any, precision: str) -> float:
    """The datasheet TFLOPS a buyer reading spec sheets would compare for this precision."""
    dtype = _PEAK_DTYPE.get(precision, "fp32")
    peak = accelerator.peak_tflops(dtype) or accelerator.peak_tflops("fp16")
    return peak or accelerator.peak_fp32_tflops or 0.0


# --- the edge: read the published set, fit held out, predict -------------------------------------


def build_configurations(
    data_dir: Path, catalog: Any, *, in_sample: bool, price_rule: str, include_latency: bool = False
) -> dict[str, Any]:
    from perdollar.predict.lab.evaluation import build_cases, pair_indices
    from perdollar.predict.lab.fit import FitResult, held_out_fit, predict_pairs
    from perdollar.predict.params import shipped_model
    from perdollar.predict.published import normalise, read_published_csv
    from perdollar.predict.references import published_profile_provider

    def accelerator_key(name: str) -> str | None:
        try:
            return catalog.accelerator(name).key
        except Exception:  # a GPU the catalog does not know cannot be priced or predicted
            return None

    prices = gpu_hour_prices(catalog.offers_frame(), price_rule)
    rows = normalise(read_published_csv(data_dir / "measurements" / "published_dev.csv"), accelerator_key)
    cases = build_cases(rows, dict(catalog.accelerators), published_profile_provider())
    frame = cases.rows
    metrics = ["throughput", "latency"] if include_latency else ["throughput"]
    priced = frame[frame["metric"].isin(metrics) & frame["accelerator_key"].isin(list(prices))]
    gpus_per_key = priced.groupby("pair_key")["accelerator_key"].nunique()
    chosen = set(gpus_per_key[gpus_per_key >= 3].index)
    all_pairs = pair_indices(cases)
    keys = frame["accelerator_key"].to_numpy()
    is_priced = frame["accelerator_key"].isin(list(prices)).to_numpy()
    anchor_rows, target_rows = all_pairs["case_anchor"].to_numpy(), all_pairs["case_target"].to_numpy()
    wanted = all_pairs[
        all_pairs["pair_key"].isin(chosen)
        & (keys[anchor_rows] != keys[target_rows])
        & is_priced[anchor_rows]
        & is_priced[target_rows]
    ]
    shipped = shipped_model()
    parts = []
    for target in sorted(set(keys[wanted["case_target"]])):
        subset = wanted[keys[wanted["case_target"]] == target]
        if in_sample:
            fit = FitResult.shipped()
        else:  # held out: no row of the target accelerator informs the fit
            names = set(frame.loc[frame["accelerator_key"] == target, "gpu"])
            print(f"  fitting without {target} …", file=sys.stderr, flush=True)
            fit = held_out_fit(cases, all_pairs, names)
        parts.append(predict_pairs(cases, subset, fit))
    preds = pd.concat(parts, ignore_index=True)
    preds["anchor_key"] = keys[preds["case_anchor"]]
    configs = []
    for pair_key, group in priced[priced["pair_key"].isin(chosen)].groupby("pair_key"):
        rates = group.groupby("accelerator_key")["per_gpu_throughput"].median().to_dict()
        mine = preds[preds["pair_key"] == pair_key]
        calibrated = {
            anchor: sub.groupby("accelerator_target")["calibrated"].median().to_dict()
            for anchor, sub in mine.groupby("anchor_key")
        }
        spec_values = mine.groupby("accelerator_target")["spec"].median()
        complete = spec_values.notna().all() and set(spec_values.index) == set(rates)
        first = group.iloc[0]
        precision = str(first["precision"])
        batch = f" batch {first['per_gpu_batch']:g}" if pd.notna(first["per_gpu_batch"]) else ""
        seq = f" seq {first['seq']}" if first["seq"] not in ("", "nan") else ""
        configs.append(
            Configuration(
                label=f"{first['model']} · {first['task']} · {precision}{batch}{seq} ({first['file']})",
                rates=rates,
                prices={k: prices[k] for k in rates},
                peaks={k: paper_peak(catalog.accelerators[k], precision) for k in rates},
                calibrated=calibrated,
                spec=spec_values.to_dict() if complete else {},
            )
        )
    bands = Bands(
        *(
            Band(shipped.errors[b].q10, shipped.errors[b].q90)
            for b in ("measured", "calibrated", "spec", "calibrated-fallback")
        )
    )
    by_file = priced[priced["pair_key"].isin(chosen)].groupby("file")["pair_key"].nunique().to_dict()
    return {"configs": configs, "bands": bands, "prices": prices, "by_file": by_file}


def _pct(x: float | None) -> str:
    return "    –" if x is None or not math.isfinite(x) else f"{100 * x:5.1f}%"


def _policy_table(policies: dict[str, dict[str, Any]]) -> None:
    print(
        f"  {'policy':<44} {'n':>4} │ best value: right  loss mean median │ deadline: met  cheapest"
        "  excess mean median (if met) │ +bench"
    )
    for name, s in policies.items():
        if not s["n"]:
            continue
        print(
            f"  {name:<44} {s['n']:>4} │ {'':>10}{_pct(s['value_right'])} {_pct(s['value_loss_mean'])} "
            f"{_pct(s['value_loss_median'])} │ {'':>8}{_pct(s['deadline_met'])}  {_pct(s['deadline_right'])}"
            f"    {_pct(s['cost_excess_mean'])} {_pct(s['cost_excess_median'])}"
            f"  ({_pct(s['cost_excess_mean_when_met'])}) │ {s['extra_measurements_mean']:6.2f}"
        )


def print_report(result: dict[str, Any]) -> None:
    files = ", ".join(f"{k}: {v}" for k, v in result["by_file"].items())
    bands = result["bands"]
    prices = ", ".join(f"{k} {v:.2f}" for k, v in sorted(result["gpu_prices"].items()))
    edges = ", ".join(
        f"{b.replace('_', ' ')} ×{math.exp(bands[b]['low']):.2f}–{math.exp(bands[b]['high']):.2f}"
        for b in ("calibrated", "calibrated_fallback", "spec", "measured")
        if bands.get(b)
    )
    print(f"Selection accuracy: {result['configurations']} configurations on ≥3 priced cloud GPUs ({files})")
    print(f"  predictions: {result['fit']}")
    print(f"  perdollar's deadline pick needs its 80% band's low end (P ≥ 0.9) to meet it; bands: {edges}")
    print(f"  $/GPU-hour ({result['price_rule']} unflagged on-demand offer, bundled catalog): {prices}")
    for subset, policies in result["policies"].items():
        print(f"\n  {subset}:")
        _policy_table(policies)
    print()
    print("  right: picked the GPU with the most measured samples/$; loss: samples/$ given up vs that GPU.")
    print("  met: measured throughput ≥ 1/2 of the fastest GPU's; cheapest: met at the lowest possible cost;")
    print("  excess: cost to target vs the cheapest GPU meeting the deadline (negative: cheaper but late).")
    print("  +bench: GPUs benchmarked beyond the anchor per decision (perdollar's sweep when unsure).")
    if result.get("misses") is not None:
        count = len(result["misses"])
        print(f"\n  perdollar's wrong best-value picks (every anchor, no extra benchmark): {count}")
        for m in result["misses"]:
            print(
                f"    {m['configuration']}: anchor {m['anchor']}, picked {m['picked']} "
                f"(predicted ×{m['picked_predicted_over_measured']:.2f} of measured) over {m['best']} "
                f"(×{m['best_predicted_over_measured']:.2f}), "
                f"{_pct(m['samples_per_dollar_lost']).strip()} lost"
            )
    print(f"\n  ran in {result['seconds']:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_dir = Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("data_dir", nargs="?", type=Path, default=default_dir, help="shared data folder")
    parser.add_argument("--in-sample", action="store_true", help="shipped parameters, not held-out fits")
    parser.add_argument("--price-rule", choices=("cheapest", "median"), default="cheapest")
    parser.add_argument("--include-latency", action="store_true", help="also rows published as latency")
    parser.add_argument("--misses", action="store_true", help="list perdollar's wrong best-value picks")
    parser.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    args = parser.parse_args(argv)
    if not (args.data_dir / "measurements" / "published_dev.csv").is_file():
        message = f"no measurements/published_dev.csv under {args.data_dir} — pass the shared data folder"
        print(message, file=sys.stderr)
        return 2
    from perdollar import catalog as catalog_module

    started = time.perf_counter()
    built = build_configurations(
        args.data_dir,
        catalog_module.load(),
        in_sample=args.in_sample,
        price_rule=args.price_rule,
        include_latency=args.include_latency,
    )
    configs: list[Configuration] = built["configs"]
    used = sorted({k for c in configs for k in c.rates})
    held_out = "held out: every target GPU predicted by a fit that never saw it"
    result = {
        "configurations": len(configs),
        "by_file": built["by_file"],
        "fit": "shipped parameters (in sample: fitted on this whole set)" if args.in_sample else held_out,
        "price_rule": args.price_rule,
        "gpu_prices": {k: built["prices"][k] for k in used},
        "bands": asdict(built["bands"]),
        "policies": evaluate(configs, built["bands"]),
        "misses": misses(configs, built["bands"]) if args.misses or args.json else None,
        "seconds": time.perf_counter() - started,
    }
    if args.json:
        print(json.dumps(result, indent=1, default=float))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
