"""How far a source's own re-measurement of the same configurations moves, beside the model's error.

    python benchmarks/llm_training_repeats.py [--worst N]

LLM Foundry published its A100 80GB table twice: first in May 2023 (Composer's PURE mixed
precision) and again in October 2023 (DEFAULT mixed precision, a newer software stack), at the
same model, sequence length, GPU count, micro-batch and accumulation.
``published_llm_training.csv`` holds the later figures; ``published_llm_training_repeats.csv``
holds the first publication of every configuration the later table measured again with a
different result (configurations whose figure did not change were carried over, not re-run, and
are left out). The script prints the later ÷ earlier ratio (the source's run-to-run spread), then
the model's error against each publication, predicted by the fit that never saw LLM Foundry (as
in ``llm_training_accuracy.py --fit``), and the configurations the two publications disagree on most.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from llm_training_accuracy import CSV, fit, model_predictor, predict_all, summary  # this folder
from llm_training_rows import PublishedRun, load_runs  # this folder

REPEATS = Path(__file__).with_name("published_llm_training_repeats.csv")
COLLECTION = "llm-foundry"


def configuration(run: PublishedRun) -> tuple[object, ...]:
    return (run.model, run.accelerator.key, run.gpu_count, run.seq_len, run.micro_batch,
            run.gradient_accumulation)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worst", type=int, default=8)
    args = parser.parse_args()
    runs, _ = load_runs(CSV)
    earlier, unusable = load_runs(REPEATS)
    if unusable:
        raise SystemExit(f"{sum(unusable.values())} rows of {REPEATS.name} cannot be predicted: {unusable}")
    later_by_configuration = {configuration(r): r for r in runs if r.collection == COLLECTION}
    pairs = [(later_by_configuration[configuration(r)], r) for r in earlier]
    ratios = [later.tokens_per_second / first.tokens_per_second for later, first in pairs]
    print(f"{len(pairs)} configurations {COLLECTION} published twice with different figures")
    print(
        f" later ÷ earlier tokens/s: median {statistics.median(ratios):.3f}, "
        f"{min(ratios):.2f} … {max(ratios):.2f}; "
        f"{sum(abs(math.log(x)) > math.log(1.10) for x in ratios)} differ by more than 10%, "
        f"{sum(abs(math.log(x)) > math.log(1.20) for x in ratios)} by more than 20%"
    )
    model = model_predictor()
    if model is None:
        raise SystemExit("perdollar.predict.llm is not importable: install the package first")
    predict, start = model
    train = [r for r in runs if not r.holdout and r.collection != COLLECTION]
    efficiency = fit(train, predict, start)
    print(f" predicted by the fit on the {len(train)} rows of the other collections")
    predicted = predict_all([later for later, _ in pairs], predict, efficiency)
    rows = [(predicted[later.index], later, first) for later, first in pairs if later.index in predicted]
    print(summary("error against the later figure", [abs(p / a.tokens_per_second - 1) for p, a, _ in rows]))
    print(summary("error against the earlier figure", [abs(p / b.tokens_per_second - 1) for p, _, b in rows]))
    print(
        summary(
            "error against their geometric mean",
            [abs(p / math.sqrt(a.tokens_per_second * b.tokens_per_second) - 1) for p, a, b in rows],
        )
    )
    print(f" the {args.worst} configurations the two publications disagree on most (predicted ÷ published):")
    rows.sort(key=lambda row: -abs(math.log(row[1].tokens_per_second / row[2].tokens_per_second)))
    for value, later, first in rows[: args.worst]:
        against_later, against_earlier = value / later.tokens_per_second, value / first.tokens_per_second
        print(f"  later {against_later:4.2f}x  earlier {against_earlier:4.2f}x  {later.describe()}")


if __name__ == "__main__":
    main()
