"""Accuracy of perdollar's LLM training prediction on published multi-GPU figures.

    python benchmarks/llm_training_accuracy.py [--csv FILE] [--fit] [--save FILE] [--worst N]

Every row of ``published_llm_training.csv`` (LLM Foundry's MPT tables, Megatron-LM's and Megatron-
Core's weak-scaling tables, NeMo's performance summary, fms-fsdp's, torchtitan's and torchao's
float8 tables) is predicted at its own plan (strategy, tensor/pipeline parallel and whether its
tensor-parallel and data-parallel collectives overlap, FSDP's backward prefetch, micro-batch,
activation checkpointing, LoRA) and precision (per-tensor or row-wise FP8), GPU,
node count, network and attention kernel (Megatron-Core's Transformer Engine runs cuDNN's fused
attention, the PyTorch trainers FlashAttention-2's), first with the
neutral starting values (``FIT_START``: nothing fitted to these rows), then with the shipped
``LLMEfficiency`` (fitted here, on every collection but the holdout). Prints the absolute
percentage error of tokens/s (median, mean, max) overall, by collection, by model size, by GPU
count and by GPU, the worst rows, the rows the memory model says would not fit, and, on the same
rows, a naive baseline: every GPU at 40% of its peak on 6·N + 12·layers·width·sequence FLOPs per
token (PaLM's MFU count).

``--fit`` then fits the ``LLMEfficiency`` parameters leave-one-collection-out: each collection is
predicted by a fit on the others (never on itself), and the collections marked ``holdout`` in
the file (torchtitan, torchao) by a fit on all the rest; only those held-out figures are printed
after the fit.
Every fit starts from ``FIT_START``, never from the shipped values (which saw every collection).
``--save`` writes the fit on every non-holdout row as JSON (the shipped defaults are copied from it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from llm_training_rows import PublishedRun, load_runs  # this folder

CSV = Path(__file__).with_name("published_llm_training.csv")
BASELINE_MFU = 0.40
Predictor = Callable[[PublishedRun, Any], float]
# Rows the model says would not fit in GPU memory, though the source ran them (index → reason).
PREDICTED_NOT_TO_FIT: dict[int, str] = {}


def baseline_tokens_per_second(run: PublishedRun, _efficiency: Any = None) -> float:
    """Every GPU at BASELINE_MFU of its dense 16-bit peak, on PaLM's 6·N + 12·L·H·Q·T FLOPs per token."""
    arch = run.architecture
    attention = 12 * arch.num_layers * arch.num_attention_heads * arch.head_dim * run.seq_len
    peak = run.accelerator.peak_bf16_tflops or run.accelerator.peak_fp16_tflops or 0.0
    return BASELINE_MFU * peak * 1e12 * run.gpu_count / (6 * arch.active_params + attention)


def model_predictor() -> tuple[Predictor, Any] | None:
    try:
        from perdollar.predict.llm import predict_llm_training
        from perdollar.predict.llm.stage import FIT_START
    except ImportError:
        return None

    def predict(run: PublishedRun, efficiency: Any) -> float:
        plan = run.plan()
        prediction = predict_llm_training(
            run.architecture,
            run.accelerator,
            gpus_per_node=run.gpus_per_node,
            nodes=run.nodes,
            plan=plan,
            seq_len=run.seq_len,
            global_batch=run.global_batch,
            precision=run.precision,
            network_gbps=run.network_gbps_per_node,
            efa_interfaces=run.gpus_per_node if run.rdma else None,
            efficiency=efficiency,
            attention_kernel=run.attention_kernel,
        )
        if not prediction.fits:
            PREDICTED_NOT_TO_FIT[run.index] = prediction.fit_reason
        return float(prediction.tokens_per_second)

    return predict, FIT_START


def errors(runs: Iterable[PublishedRun], predicted: dict[int, float]) -> list[float]:
    return [
        abs(predicted[r.index] - r.tokens_per_second) / r.tokens_per_second
        for r in runs
        if r.index in predicted
    ]


def summary(label: str, errs: list[float]) -> str:
    if not errs:
        return f"  {label:<34} n=0"
    return (
        f"  {label:<34} n={len(errs):<4} median {100 * statistics.median(errs):5.1f}%  "
        f"mean {100 * statistics.fmean(errs):5.1f}%  max {100 * max(errs):6.1f}%  "
        f"within 10% {100 * sum(e <= 0.10 for e in errs) / len(errs):3.0f}%  "
        f"worse than 35% {sum(e > 0.35 for e in errs)}"
    )


def size_bucket(run: PublishedRun) -> str:
    params = run.architecture.total_params
    return next(
        label
        for limit, label in (
            (1e9, "a  <1B"),
            (1e10, "b  1-10B"),
            (1e11, "c  10-100B"),
            (math.inf, "d  >=100B"),
        )
        if params < limit
    )


def gpu_bucket(run: PublishedRun) -> str:
    n = run.gpu_count
    return next(
        label
        for limit, label in ((8, "a  8"), (64, "b  16-64"), (512, "c  96-512"), (math.inf, "d  >512"))
        if n <= limit
    )


def fit_label(run: PublishedRun) -> str:
    return "says it does not fit" if run.index in PREDICTED_NOT_TO_FIT else "says it fits"


def report(title: str, runs: list[PublishedRun], predicted: dict[int, float], worst: int) -> None:
    print(title)
    print(summary("all rows", errors(runs, predicted)))
    for name, key in (
        ("collection", lambda r: r.collection),
        ("model size", size_bucket),
        ("GPUs", gpu_bucket),
        ("GPU", lambda r: r.accelerator.key),
        ("precision", lambda r: r.precision),
        ("memory model", fit_label),
    ):
        groups: dict[str, list[PublishedRun]] = {}
        for run in runs:
            groups.setdefault(key(run), []).append(run)
        print(f" by {name}:")
        for group, members in sorted(groups.items()):
            print(summary(group, errors(members, predicted)))
    ranked = sorted(
        (r for r in runs if r.index in predicted),
        key=lambda r: -abs(predicted[r.index] / r.tokens_per_second - 1),
    )
    print(f" worst {worst} rows (predicted / published tokens/s):")
    for run in ranked[:worst]:
        ratio = predicted[run.index] / run.tokens_per_second
        print(f"  {ratio:5.2f}x  {run.describe()}")


def predict_all(
    runs: list[PublishedRun], predict: Predictor, efficiency: Any, skipped: dict[str, int] | None = None
) -> dict[int, float]:
    out: dict[int, float] = {}
    for run in runs:
        try:
            out[run.index] = predict(run, efficiency)
        except Exception as error:  # one row the model cannot express must not hide the rest
            if skipped is not None:
                reason = f"{type(error).__name__}: {str(error)[:90]}"
                skipped[reason] = skipped.get(reason, 0) + 1
    return {key: value for key, value in out.items() if value > 0 and math.isfinite(value)}


# The parameters fitted: fusion and the overlaps (the FP8 GEMMs' rates are fitted on the FP8 rows
# alone, by llm_training_fp8_accuracy.py). The GEMMs' and attention's
# rates come from measurements (the roofline's fit, FlashAttention-2's paper) and the links' shares
# of their line rate from NCCL's usual figures: the published runs say too little about them
# apart (freed, GEMM and attention rates trade against each other and the links against the
# overlaps, and a fold without LLM Foundry lands on a GEMM rate 11% above the roofline's).
FITTED = (
    "fusion",
    "communication_overlap",
    "tensor_parallel_overlap",
)


def fitted_fields(efficiency: Any) -> list[str]:
    return [name for name in FITTED if hasattr(efficiency, name)]


# Fusion and overlaps are shares (0 to 1).
BOUNDS = {
    "fusion": (0.0, 1.0),
    "communication_overlap": (0.0, 1.0),
    "tensor_parallel_overlap": (0.0, 0.9),
}


def fit(runs: list[PublishedRun], predict: Predictor, start: Any) -> Any:
    """Powell's method over the parameters, each within its bounds, minimising the mean absolute
    log error (the error of a ratio: the targets span four orders of magnitude)."""
    from scipy.optimize import minimize

    names = fitted_fields(start)

    def candidate(values: Any) -> Any:
        chosen = {n: round(float(v), 3) for n, v in zip(names, values, strict=True)}
        return dataclasses.replace(start, **chosen)

    def loss(values: Any) -> float:
        predicted = predict_all(runs, predict, candidate(values))
        if len(predicted) < len(runs) // 2:
            return 1e6
        return statistics.fmean(
            abs(math.log(predicted[r.index] / r.tokens_per_second)) for r in runs if r.index in predicted
        )

    bounds = [BOUNDS[n] for n in names]
    first = [min(max(getattr(start, n), low), high) for n, (low, high) in zip(names, bounds, strict=True)]
    result = minimize(loss, first, method="Powell", bounds=bounds, options={"xtol": 1e-2, "ftol": 1e-4})
    return candidate(result.x)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--fit", action="store_true", help="fit LLMEfficiency leave-one-collection-out")
    parser.add_argument("--save", type=Path, help="with --fit: write the fit on all non-holdout rows here")
    parser.add_argument("--worst", type=int, default=12)
    args = parser.parse_args()
    runs, unusable = load_runs(args.csv)
    print(f"{len(runs) + sum(unusable.values())} published rows, {len(runs)} with a plan the model expresses")
    for reason, count in sorted(unusable.items()):
        print(f"  not predicted ({count}): {reason}")
    baseline = predict_all(runs, baseline_tokens_per_second, None)
    report(f"naive baseline ({BASELINE_MFU:.0%} of peak on every GPU):", runs, baseline, args.worst)
    model = model_predictor()
    if model is None:
        print("perdollar.predict.llm.predict_llm_training is not available: baseline only")
        return
    predict, start = model
    from perdollar.predict.llm import LLMEfficiency

    skipped: dict[str, int] = {}
    before = predict_all(runs, predict, start, skipped)
    for reason, count in sorted(skipped.items()):
        print(f"  model refused ({count}): {reason}")
    report("perdollar before any fit (datasheet links, no fusion, FIT_START):", runs, before, args.worst)
    PREDICTED_NOT_TO_FIT.clear()
    shipped = predict_all(runs, predict, LLMEfficiency())
    report(
        "perdollar as shipped (fitted on every collection but the holdout: in sample but for it):",
        runs,
        shipped,
        args.worst,
    )
    print(f" rows the source ran that the model says do not fit in memory: {len(PREDICTED_NOT_TO_FIT)}")
    for index, reason in sorted(PREDICTED_NOT_TO_FIT.items())[: args.worst]:
        run = next(r for r in runs if r.index == index)
        print(f"  {run.describe()}: {reason[:120]}")
    if not args.fit:
        return
    collections = sorted({r.collection for r in runs})
    held_out: dict[int, float] = {}
    fits: dict[str, Any] = {}
    trainable = [r for r in runs if not r.holdout]
    for collection in collections:
        train = [r for r in trainable if r.collection != collection]
        fits[collection] = fit(train, predict, start)
        test = [r for r in runs if r.collection == collection]
        held_out.update(predict_all(test, predict, fits[collection]))
        print(f"  fit without {collection}: {dataclasses.asdict(fits[collection])}")
    report(
        "perdollar after the fit, each collection predicted by a fit that never saw it:",
        runs,
        held_out,
        args.worst,
    )
    if args.save:
        final = fit(trainable, predict, start)
        if hasattr(final, "basis"):
            final = dataclasses.replace(final, basis="calibrated")
        document = {
            "fitted_on": sorted({r.collection for r in trainable}),
            "rows": len(trainable),
            "parameters": dataclasses.asdict(final),
        }
        args.save.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.save}: {document['parameters']}")


if __name__ == "__main__":
    main()
