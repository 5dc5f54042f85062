"""How many benchmark runs does a sweep need to find the best samples-per-dollar GPU?

Simulation on the published measurements (``published_dev.csv``): for every configuration
measured on at least three GPU types that the catalog prices (same collection, model, task,
precision, batch, sequence length, software era and GPU count; LLM serving tables left out
because they tune precision and batch per GPU), the published throughput is the truth a sweep
would measure. Each GPU is priced at its cheapest on-demand price per accelerator in perdollar's
bundled catalog (unflagged offers only) times the GPU count, and a benchmark run costs that
price for the job's cap (10 min provisioning + 2.5 min run).

Predictions and their bands (what a sweep starts from) come from one of two documented priors:

* ``geomean`` (default): each GPU predicted from the *other* GPUs of the same configuration,
  scaling their measured figure by the geometric mean of the peak-FLOPS ratio (for the
  precision) and the memory-bandwidth ratio, averaged over anchors in log space — the naive
  cross-GPU predictor of the data README. The band width is the spread of this prior's own log
  errors over the whole set (robust σ), so bands are calibrated on average.
* ``noisy``: the truth times log-normal noise of σ ``--sigma`` (repeated over ``--seeds``).

Strategies: ``top-k`` measures in order of predicted samples/$; ``voi`` picks the highest
value of information per benchmark dollar (perdollar.launch.strategy), updating beliefs after
every run. Reported: runs (and dollars) until the choice — the best point estimate, measured
figures winning — is the true best and stays so; and, with stopping rules (VOI: P(best) ≥ 0.9;
top-k: fixed K), how often the final choice is the true best, its regret, runs and dollars.

    python benchmarks/sweep_strategy.py
    python benchmarks/sweep_strategy.py --prior noisy --sigma 0.25 --seeds 20
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from perdollar.launch.strategy import Belief, belief_from_band, p_top_is_best, rank_picks

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RUN_HOURS = (600 + 150) / 3600  # provisioning + capped run, billed
PRECISION_PEAK = {
    "fp32": "peak_fp32_tflops",
    "tf32": "peak_tf32_tflops",
    "amp": "peak_fp16_tflops",
    "fp16": "peak_fp16_tflops",
    "bf16": "peak_bf16_tflops",
}


@dataclass(frozen=True)
class Config:
    label: str
    gpus: tuple[str, ...]  # accelerator keys
    truth: np.ndarray  # samples per dollar
    predicted: np.ndarray  # samples per dollar (prior)
    sigma: np.ndarray  # σ of log samples/$ for each prediction
    run_cost: np.ndarray  # USD per benchmark run


def _era(notes: str) -> str:
    match = re.search(r"(v[0-9] era|PyTorch[= ][0-9.]+[a-z0-9+]*|pytorch:[0-9.]+)", notes or "")
    return match.group(1) if match else ""


def load_configs(data: Path) -> list[tuple[str, dict[str, float], str, int]]:
    """(label, {accelerator key: throughput}, precision, GPU count) per configuration."""
    rows = pd.read_csv(data / "measurements" / "published_dev.csv")
    aliases = pd.read_csv(data / "gpu_name_aliases.csv").set_index("measurement_gpu_name")["accelerator_key"]
    # LLM serving tables tune precision and batch per GPU, so their rows are not like for like.
    rows = rows[
        (rows["metric"] == "throughput")
        & ~rows["file"].isin(["tensorrt_llm_inference.csv", "llamacpp_llama3_inference.csv"])
    ]
    rows = rows[rows["precision"].isin(list(PRECISION_PEAK))].copy()
    rows["key"] = rows["gpu"].map(aliases)
    rows["era"] = rows["notes"].map(_era)
    rows = rows.dropna(subset=["key"])
    configs = []
    group_by = [
        "file",
        "model",
        "task",
        "precision",
        "batch_size",
        "batch_scope",
        "seq_len",
        "era",
        "gpu_count",
    ]
    for values, group in rows.groupby(group_by, dropna=False):
        per_gpu = group.groupby("key")["throughput"].median().to_dict()
        label = " | ".join(str(v) for v in values if str(v) not in ("nan", ""))
        configs.append((label, per_gpu, str(values[3]), int(values[-1])))
    return configs


def gpu_prices() -> dict[str, float]:
    """Cheapest on-demand USD per accelerator-hour per accelerator key (unflagged offers)."""
    from perdollar import catalog

    frame = catalog.load().offers_frame()
    frame = frame[(frame["market"] == "on-demand") & (frame["accelerator_count"] >= 1)]
    frame = frame[frame["flags"].map(lambda flags: not flags)]
    per_gpu = frame["price_per_hour"] / frame["accelerator_count"]
    return per_gpu.groupby(frame["accelerator_key"]).min().to_dict()


def spec_table() -> pd.DataFrame:
    from perdollar import catalog

    rows = []
    for key, chip in catalog.load().accelerators.items():
        rows.append(
            {
                "key": key,
                "bandwidth": chip.memory_bandwidth_gbps,
                **{column: getattr(chip, column) for column in set(PRECISION_PEAK.values())},
            }
        )
    return pd.DataFrame(rows).set_index("key")


def geomean_predictions(per_gpu: dict[str, float], precision: str, specs: pd.DataFrame) -> dict[str, float]:
    peak = PRECISION_PEAK[precision]
    predictions = {}
    for target in per_gpu:
        logs = []
        for anchor, value in per_gpu.items():
            if anchor == target:
                continue
            try:
                flops = specs.at[target, peak] / specs.at[anchor, peak]
                bandwidth = specs.at[target, "bandwidth"] / specs.at[anchor, "bandwidth"]
            except KeyError:
                continue
            if not (flops > 0 and bandwidth > 0):
                continue
            logs.append(math.log(value) + 0.5 * (math.log(flops) + math.log(bandwidth)))
        if logs:
            predictions[target] = math.exp(sum(logs) / len(logs))
    return predictions


def build(data: Path, prior: str, sigma: float, seed: int, min_gpus: int) -> list[Config]:
    prices = gpu_prices()
    specs = spec_table()
    raw = []
    for label, per_gpu, precision, gpu_count in load_configs(data):
        priced = {k: v for k, v in per_gpu.items() if k in prices and v > 0}
        if len(priced) < min_gpus:
            continue
        predicted = geomean_predictions(priced, precision, specs) if prior == "geomean" else {}
        raw.append((label, priced, predicted, gpu_count))
    rng = np.random.default_rng(seed)
    errors = [math.log(pred[k] / priced[k]) for _, priced, pred, _ in raw for k in pred]
    robust = (
        1.4826 * statistics.median(abs(e - statistics.median(errors)) for e in errors) if errors else sigma
    )
    if prior == "geomean" and errors:
        print(
            f"geomean prior: median |error| {statistics.median(abs(math.expm1(e)) for e in errors):.0%}, "
            f"robust σ of log error {robust:.2f} over {len(errors)} predictions"
        )
    configs = []
    for label, priced, predicted, gpu_count in raw:
        gpus = tuple(sorted(priced))
        if prior == "geomean" and any(g not in predicted for g in gpus):
            continue
        price = np.array([prices[g] for g in gpus]) * gpu_count
        truth = np.array([priced[g] for g in gpus]) * 3600 / price
        if prior == "geomean":
            guess = np.array([predicted[g] for g in gpus]) * 3600 / price
            width = np.full(len(gpus), robust)
        else:
            guess = truth * np.exp(sigma * rng.standard_normal(len(gpus)))
            width = np.full(len(gpus), sigma)
        configs.append(Config(label, gpus, truth, guess, width, price * RUN_HOURS))
    return configs


def _beliefs(config: Config, measured: set[int]) -> list[Belief]:
    beliefs = []
    for i, gpu in enumerate(config.gpus):
        if i in measured:
            beliefs.append(
                belief_from_band(gpu, config.truth[i], None, None, config.run_cost[i], measured=True)
            )
        else:
            beliefs.append(
                Belief(gpu, math.log(config.predicted[i]), float(config.sigma[i]), float(config.run_cost[i]))
            )
    return beliefs


def _choice(config: Config, measured: set[int]) -> int:
    estimate = [config.truth[i] if i in measured else config.predicted[i] for i in range(len(config.gpus))]
    return int(np.argmax(estimate))


def order_top_k(config: Config) -> list[int]:
    return [int(i) for i in np.argsort(-config.predicted, kind="stable")]


def order_voi(config: Config, confidence: float) -> tuple[list[int], int]:
    """The full VOI measuring order, and how many runs its stopping rule would have made."""
    measured: set[int] = set()
    order: list[int] = []
    stop_at = None
    index = {g: i for i, g in enumerate(config.gpus)}
    while len(measured) < len(config.gpus):
        beliefs = _beliefs(config, measured)
        if stop_at is None and measured and p_top_is_best(beliefs, draws=2000) >= confidence:
            stop_at = len(measured)
        picks = rank_picks(beliefs)
        best = picks[0]
        if best.value_per_dollar <= 1e-12:  # nothing left can change the choice: cheapest remaining next
            best = min(picks, key=lambda p: config.run_cost[index[p.key]])
        measured.add(index[best.key])
        order.append(index[best.key])
    return order, stop_at if stop_at is not None else len(order)


def runs_to_find(config: Config, order: list[int]) -> tuple[int, float]:
    best = int(np.argmax(config.truth))
    found_at, spent, spent_at = len(order), 0.0, float(config.run_cost.sum())
    measured: set[int] = set()
    if _choice(config, measured) == best:
        found_at, spent_at = 0, 0.0
    for n, i in enumerate(order, 1):
        measured.add(i)
        spent += config.run_cost[i]
        if _choice(config, measured) == best:
            if found_at > n or found_at == len(order):
                found_at, spent_at = n, spent
        else:
            found_at, spent_at = len(order), float(config.run_cost.sum())
    return found_at, spent_at


def outcome_after(config: Config, order: list[int], runs: int) -> tuple[bool, float, float]:
    measured = set(order[:runs])
    chosen = _choice(config, measured)
    best = float(config.truth.max())
    return (
        chosen == int(np.argmax(config.truth)),
        1 - config.truth[chosen] / best,
        float(config.run_cost[list(measured)].sum()),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding measurements/")
    parser.add_argument("--prior", choices=("geomean", "noisy"), default="geomean")
    parser.add_argument("--sigma", type=float, default=0.25, help="noisy prior: σ of log error")
    parser.add_argument("--seeds", type=int, default=1, help="noisy prior: repetitions")
    parser.add_argument("--min-gpus", type=int, default=3)
    parser.add_argument("--confidence", type=float, default=0.9)
    parser.add_argument("--k", type=int, default=3, help="top-k with a fixed K")
    args = parser.parse_args(argv)
    if not (args.data / "measurements" / "published_dev.csv").exists():
        print(f"no published_dev.csv under {args.data}; pass --data", file=sys.stderr)
        return 2
    stats: dict[str, list[float]] = {
        name: []
        for name in (
            "voi_runs",
            "topk_runs",
            "voi_usd",
            "topk_usd",
            "n_gpus",
            "prior_right",
            "voi_stop_right",
            "voi_stop_regret",
            "voi_stop_runs",
            "voi_stop_usd",
        )
    }
    configs_seen = 0
    for seed in range(args.seeds if args.prior == "noisy" else 1):
        for config in build(args.data, args.prior, args.sigma, seed, args.min_gpus):
            configs_seen += 1
            voi, stop = order_voi(config, args.confidence)
            top = order_top_k(config)
            for name, order in (("voi", voi), ("topk", top)):
                runs, usd = runs_to_find(config, order)
                stats[f"{name}_runs"].append(runs)
                stats[f"{name}_usd"].append(usd)
            stats["n_gpus"].append(len(config.gpus))
            stats["prior_right"].append(float(_choice(config, set()) == int(np.argmax(config.truth))))
            right, regret, usd = outcome_after(config, voi, stop)
            stats["voi_stop_right"].append(float(right))
            stats["voi_stop_regret"].append(regret)
            stats["voi_stop_runs"].append(stop)
            stats["voi_stop_usd"].append(usd)
            for k in sorted({1, 2, args.k}):
                right, regret, usd = outcome_after(config, top, min(k, len(config.gpus)))
                for field, value in (
                    ("right", float(right)),
                    ("regret", regret),
                    ("usd", usd),
                    ("runs", min(k, len(config.gpus))),
                ):
                    stats.setdefault(f"top{k}_{field}", []).append(value)

    def mean(name: str) -> float:
        return statistics.fmean(stats[name])

    def median(name: str) -> float:
        return statistics.median(stats[name])

    print(
        f"prior: {args.prior}" + (f" (σ={args.sigma}, {args.seeds} seeds)" if args.prior == "noisy" else "")
    )
    print(
        f"configurations: {configs_seen} (≥{args.min_gpus} priced GPUs; mean {mean('n_gpus'):.1f} GPUs each)"
    )
    print(f"prediction alone picks the true best: {mean('prior_right'):.0%}")
    print("runs until the choice is the true best (and stays):")
    print(
        f"  voi   : mean {mean('voi_runs'):.2f}, median {median('voi_runs'):.0f}, "
        f"mean ${mean('voi_usd'):.2f} of benchmarks"
    )
    print(
        f"  top-k : mean {mean('topk_runs'):.2f}, median {median('topk_runs'):.0f}, "
        f"mean ${mean('topk_usd'):.2f} of benchmarks"
    )
    print(f"with stopping rules (voi: P(best) ≥ {args.confidence:.0%}; top-k: K={args.k}):")
    print(
        f"  voi   : right {mean('voi_stop_right'):.0%}, mean regret {mean('voi_stop_regret'):.1%}, "
        f"mean runs {mean('voi_stop_runs'):.2f}, mean ${mean('voi_stop_usd'):.2f}"
    )
    for k in sorted({1, 2, args.k}):
        print(
            f"  top-{k} : right {mean(f'top{k}_right'):.0%}, mean regret {mean(f'top{k}_regret'):.1%}, "
            f"mean runs {mean(f'top{k}_runs'):.2f}, mean ${mean(f'top{k}_usd'):.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
