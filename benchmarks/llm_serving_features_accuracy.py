"""Serving-engine features against published figures, and what each is worth on reference setups.

    python3 benchmarks/llm_serving_features_accuracy.py

Published rows (benchmarks/published_llm_serving_features.csv, source and date per row): the
decode speed-up of speculative decoding, predicted as the ratio of TPOT without and with it at
the row's batch, from the acceptance rate the row names (no parameter is fitted to these rows).
Request lengths a source leaves unstated are taken as 256 in and 256 out.

Then the features' physics on DeepSeek-V3 (fp8, 8 × H200) and Llama 3.1 8B (1 × H100): speculative
decoding's gain against batch, prefix caching's TTFT and ceiling, expert parallelism against
tensor parallelism, and 1P3D disaggregation, each printed with and without the feature.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving import GroupShape, RequestShape, predict_llm_serving, serving_format
from perdollar.predict.llm_serving.disaggregate import Disaggregation, predict_disaggregated
from perdollar.predict.llm_serving.engines import serving_engine
from perdollar.predict.llm_serving.features import Speculation
from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parent / "src" / "perdollar" / "workload" / "llm" / "configs"
UNSTATED_LENGTH = 256


def _arch(name: str) -> DecoderArchitecture:
    return from_hf_config(load_config_file(CONFIGS / f"{name}.json"), name=name)


def published_speedups(catalog: catalog_mod.Catalog) -> list[float]:
    errors = []
    print("speculative decoding: published decode speed-up vs predicted (TPOT without / with)")
    with (HERE / "published_llm_serving_features.csv").open() as handle:
        for row in csv.DictReader(handle):
            engine = serving_engine(row["engine"])
            fmt = engine.serving_format(serving_format(row["precision"]))
            chip = catalog.accelerator(row["gpu"])
            shape = GroupShape(int(row["tensor_parallel"]), 1, int(row["expert_parallel"]))
            lengths = (
                int(row["input_tokens"] or UNSTATED_LENGTH),
                int(row["output_tokens"] or UNSTATED_LENGTH),
            )
            spec = Speculation(row["speculative"], float(row["acceptance"]), int(row["speculative_tokens"]))
            batch = int(row["batch"])
            eff = engine.step_efficiency()
            plain = predict_llm_serving(_arch(row["model"]), chip, fmt, RequestShape(*lengths), shape=shape,
                                        batch=batch, efficiency=eff)  # fmt: skip
            fast = predict_llm_serving(_arch(row["model"]), chip, fmt,
                                       RequestShape(*lengths, speculation=spec),
                                       shape=shape, batch=batch, efficiency=eff)  # fmt: skip
            predicted = plain.tpot_ms / fast.tpot_ms
            published = float(row["value"])
            errors.append(abs(predicted / published - 1))
            print(f"  {row['model']} {row['gpu']}×{row['gpu_count']} batch {batch:>3} {row['speculative']} "
                  f"k={spec.tokens} a={spec.acceptance:g}: published {published:.2f}x, predicted "
                  f"{predicted:.2f}x ({errors[-1]:.1%})")  # fmt: skip
    print(f"  median error {statistics.median(errors):.1%} over {len(errors)} rows")
    return errors


def _line(label: str, without: object, with_: object) -> None:
    a, b = without, with_
    print(f"  {label}: {a.output_tokens_per_second:,.0f} → {b.output_tokens_per_second:,.0f} output tok/s, "  # type: ignore[attr-defined]
          f"TTFT {a.ttft_ms:.1f} → {b.ttft_ms:.1f} ms, TPOT {a.tpot_ms:.1f} → {b.tpot_ms:.1f} ms, "  # type: ignore[attr-defined]
          f"sequences {a.max_concurrent_sequences} → {b.max_concurrent_sequences}")  # type: ignore[attr-defined]  # fmt: skip


def reference_setups(catalog: catalog_mod.Catalog) -> None:
    vllm = serving_engine("vllm")
    eff = vllm.step_efficiency()
    h100, h200 = catalog.accelerator("H100"), catalog.accelerator("H200")
    llama = _arch("llama-3.1-8b")
    fp16 = vllm.serving_format(serving_format("fp16"))
    print("\nspeculative decoding (draft model, k=3, a=0.7) on Llama 3.1 8B, 1 × H100, vLLM, static batches:")
    spec = Speculation("draft-model", 0.7, 3)
    for batch in (1, 8, 32, 128, 256):
        plain = predict_llm_serving(llama, h100, fp16, RequestShape(1000, 300), batch=batch, efficiency=eff)
        fast = predict_llm_serving(llama, h100, fp16, RequestShape(1000, 300, speculation=spec), batch=batch,
                                   efficiency=eff)  # fmt: skip
        gain = plain.tpot_ms / fast.tpot_ms
        print(f"  batch {batch:>3}: TPOT {plain.tpot_ms:.2f} → {fast.tpot_ms:.2f} ms ({gain:.2f}x)")
    print("\nprefix caching on Llama 3.1 8B, 1 × H100, 4000 in / 200 out, max load:")
    plain = predict_llm_serving(llama, h100, fp16, RequestShape(4000, 200), efficiency=eff)
    for share in (0.5, 0.9):
        _line(f"share {share:g}", plain, predict_llm_serving(llama, h100, fp16,
                                                             RequestShape(4000, 200, share),
                                                             efficiency=eff))  # fmt: skip
    deepseek = _arch("deepseek-v3")
    fp8 = vllm.serving_format(serving_format("fp8"))
    work = RequestShape(1000, 300)
    print("\nDeepSeek-V3 fp8 on 8 × H200, vLLM, 1000 in / 300 out, max load:")
    tensor = predict_llm_serving(deepseek, h200, fp8, work, shape=GroupShape(8), efficiency=eff)
    for label, shape in (("TP8 attention", GroupShape(8, 1, 8)), ("DP8 attention", GroupShape(1, 1, 8))):
        expert = predict_llm_serving(deepseek, h200, fp8, work, shape=shape, efficiency=eff)
        _line(f"TP8 → EP8 ({label})", tensor, expert)
    print(
        "\n1P3D disaggregation, Llama 3.1 8B on 4 × H100 (1-GPU replicas), 1000 in / 300 out, "
        "against 4 colocated:"
    )
    alone = predict_llm_serving(llama, h100, fp16, work, efficiency=eff)
    split = predict_disaggregated(llama, h100, fp16, work, Disaggregation(1, 3), efficiency=eff)
    print(
        f"  colocated ×4: {4 * alone.output_tokens_per_second:,.0f} output tok/s, "
        f"TPOT {alone.tpot_ms:.1f} ms; "
        f"1P3D: {split.output_tokens_per_second:,.0f} output tok/s, TPOT {split.tpot_ms:.1f} ms, TTFT "
        f"{alone.ttft_ms:.1f} → {split.ttft_ms:.1f} ms "
        f"(KV transfer {split.breakdown_ms['kv_transfer']:.2f} ms)"
    )


def main() -> None:
    catalog = catalog_mod.load()
    published_speedups(catalog)
    reference_setups(catalog)


if __name__ == "__main__":
    main()
