"""FP8 training rows held out one source at a time, and the BF16 dense rows beside them.

    PYTHONPATH=src python benchmarks/llm_training_fp8_accuracy.py

The FP8 rows of ``published_llm_training.csv`` (LLM Foundry's and NeMo's Transformer Engine runs,
torchtitan's and torchao's float8 runs, all on H100 and H200) are predicted three ways:

- as shipped (the ``LLMEfficiency`` defaults, fitted on these rows: in sample);
- neutral: every FP8 product at the roofline's FP8 rate (``fp8_efficiency`` and, where the model
  has it, ``fp8_torchao_efficiency`` at 1.0), nothing fitted to FP8 rows;
- held out: each source predicted with the FP8 rates fitted on the other sources' FP8 rows only
  (each library's rate on that library's rows; a library with no rows left keeps 1.0).

The BF16 dense rows (no mixture of experts) are printed as shipped: the FP8 rates do not touch
them, and they must not get worse. Run against an older checkout's ``src`` (``PYTHONPATH``) it
prints that model's figures, for the before/after in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from pathlib import Path
from typing import Any

from llm_training_accuracy import CSV, model_predictor, predict_all  # this folder
from llm_training_rows import PublishedRun, load_runs  # this folder

FP8_PRECISIONS = ("fp8", "fp8-rowwise")
RATE_BOUNDS = (0.5, 1.3)  # FP8 products' share of the roofline's FP8 rate a fit may choose


def library(run: PublishedRun) -> str:
    """The FP8 library the row ran: Transformer Engine under Megatron-Core, NeMo and Composer."""
    return "transformer-engine" if run.framework in ("megatron", "nemo", "composer") else "torchao"


def rate_fields(efficiency: Any) -> dict[str, str]:
    """The efficiency field of each library's FP8 rate (one field for both in older models)."""
    both = "fp8_torchao_efficiency"
    torchao = both if hasattr(efficiency, both) else "fp8_efficiency"
    return {"transformer-engine": "fp8_efficiency", "torchao": torchao}


def log_error(runs: list[PublishedRun], predicted: dict[int, float]) -> float:
    return statistics.fmean(abs(math.log(predicted[r.index] / r.tokens_per_second)) for r in runs)


def fit_rates(runs: list[PublishedRun], predict: Any, start: Any) -> Any:
    """Each library's FP8 rate minimising the mean absolute log error on its rows in ``runs``."""
    from scipy.optimize import minimize_scalar

    fields = rate_fields(start)
    if fields["torchao"] == fields["transformer-engine"]:  # one rate for every FP8 row
        groups = {"fp8_efficiency": runs}
    else:
        groups = {fields[name]: [r for r in runs if library(r) == name] for name in fields}
    fitted = start
    for field, members in groups.items():
        if not members:
            continue

        def loss(value: float, field: str = field, members: list[PublishedRun] = members,
                 base: Any = fitted) -> float:  # fmt: skip
            candidate = dataclasses.replace(base, **{field: round(value, 3)})
            predicted = predict_all(members, predict, candidate)
            return log_error([r for r in members if r.index in predicted], predicted)

        best = minimize_scalar(loss, bounds=RATE_BOUNDS, method="bounded", options={"xatol": 2e-3})
        fitted = dataclasses.replace(fitted, **{field: round(float(best.x), 3)})
    return fitted


def line(label: str, runs: list[PublishedRun], predicted: dict[int, float]) -> str:
    errs = [abs(predicted[r.index] / r.tokens_per_second - 1) for r in runs if r.index in predicted]
    if not errs:
        return f"  {label:<40} n=0"
    return (
        f"  {label:<40} n={len(errs):<4} median {100 * statistics.median(errs):5.1f}%  "
        f"mean {100 * statistics.fmean(errs):5.1f}%  max {100 * max(errs):5.1f}%  "
        f"within 10% {100 * sum(e <= 0.10 for e in errs) / len(errs):3.0f}%"
    )


def report(title: str, runs: list[PublishedRun], predicted: dict[int, float]) -> None:
    print(title)
    print(line("all FP8 rows", runs, predicted))
    keys = ((lambda r: r.collection, "source"), (library, "library"),
            (lambda r: r.precision, "precision"), (lambda r: r.accelerator.key, "GPU"))  # fmt: skip
    for key, name in keys:
        groups: dict[str, list[PublishedRun]] = {}
        for run in runs:
            groups.setdefault(key(run), []).append(run)
        print(f" by {name}:")
        for group, members in sorted(groups.items()):
            print(line(group, members, predicted))


def main() -> None:
    from perdollar.predict.llm import LLMEfficiency

    model = model_predictor()
    if model is None:
        raise SystemExit("perdollar.predict.llm is not importable: set PYTHONPATH=src")
    predict, _ = model
    runs, _ = load_runs(Path(CSV))
    fp8 = [r for r in runs if r.precision in FP8_PRECISIONS]
    dense_bf16 = [r for r in runs if r.precision == "amp-bf16" and not r.architecture.is_moe]
    shipped = LLMEfficiency()
    neutral = dataclasses.replace(shipped, **dict.fromkeys(set(rate_fields(shipped).values()), 1.0))
    print(f"{len(fp8)} FP8 rows, {len(dense_bf16)} BF16 dense rows")
    print("shipped FP8 rates:", {name: getattr(shipped, f) for name, f in rate_fields(shipped).items()})
    report("as shipped (in sample):", fp8, predict_all(fp8, predict, shipped))
    report("neutral (FP8 products at the roofline's FP8 rate, nothing fitted):", fp8,
           predict_all(fp8, predict, neutral))  # fmt: skip
    held_out: dict[int, float] = {}
    for source in sorted({r.collection for r in fp8}):
        fitted = fit_rates([r for r in fp8 if r.collection != source], predict, neutral)
        rates = {name: getattr(fitted, f) for name, f in rate_fields(fitted).items()}
        print(f"  fit without {source}: {rates}")
        held_out.update(predict_all([r for r in fp8 if r.collection == source], predict, fitted))
    report("each source held out (FP8 rates fitted on the other sources):", fp8, held_out)
    print("on every FP8 row:", {name: getattr(fit_rates(fp8, predict, neutral), f)
                                for name, f in rate_fields(shipped).items()})  # fmt: skip
    print("BF16 dense rows, as shipped (untouched by the FP8 rates):")
    bf16 = predict_all(dense_bf16, predict, shipped)
    print(line("all BF16 dense rows", dense_bf16, bf16))
    for source in sorted({r.collection for r in dense_bf16}):
        print(line(source, [r for r in dense_bf16 if r.collection == source], bf16))


if __name__ == "__main__":
    main()
