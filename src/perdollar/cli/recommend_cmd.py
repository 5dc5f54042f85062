"""``perdollar recommend`` and ``perdollar compare``: price every candidate and rank by utility."""

from __future__ import annotations

from pathlib import Path

import typer

from perdollar.ask import answer
from perdollar.ask.compare import compare_question
from perdollar.cli import common, llm_options, recommend_inputs
from perdollar.cli.inference_cmd import serving_question
from perdollar.cli.persist import check_store
from perdollar.cli.recommend_render import show_comparison, show_recommendation
from perdollar.errors import EXIT_OK, PerdollarError
from perdollar.question import Question, SpotSettings
from perdollar.workload import canonical_spec, load_workload
from perdollar.workload.llm import looks_like_llm

RECOMMEND_HELP = (
    "Which machine should this workload train on? Profile it, predict it on every instance of "
    "every cloud in the catalog (1, 2, 4 … --max-nodes nodes, on-demand and spot), price each "
    "candidate (spot: interruptions, Young/Daly checkpoints, restarts, any node stalls all), and "
    "rank by your objective.\n\n"
    "Objectives: samples-per-dollar (default), time (fastest), cost (cheapest), weighted "
    "(--weights time=1,cost=2). With any objective, --deadline must be met with probability "
    "--confidence and --budget caps the expected cost. Candidates within each other's prediction "
    "bands are marked as ties (≈).\n\n"
    "Examples:\n\n"
    "  perdollar recommend vit-b16 --samples 1e9 --deadline 72h --market any --max-nodes 4\n"
    "  perdollar recommend resnet50 --epochs 90 --dataset-size 1.28M --objective cost --deadline 48h\n"
    "  perdollar recommend bert-base --samples 5e8 --objective time --budget 500 --cloud aws\n"
    "  perdollar recommend vit-b16 --measurements published.csv --json\n"
    "  perdollar recommend resnet50 --inference --qps 200 --p99-ms 50\n\n"
    "Exit codes: 0 ok; 2 bad input; 3 nothing satisfies the constraints (the message says which "
    "one binds and by how much)."
)

COMPARE_HELP = (
    'Compare a shortlist of configurations side by side, hyperfine style: "1.9 ± 0.2 times '
    'cheaper than …" with the reasons (price, throughput and bottleneck, spot losses).\n\n'
    "A configuration is a label as `recommend` prints it (2x g5.12xlarge spot (aws us-east-1)) or "
    "[N x] NAME [spot|on-demand] [@REGION], optionally with a cloud prefix (gcp:a2-highgpu-1g). "
    "Without a market it is on-demand; without a region the cheapest region is used.\n\n"
    "Examples:\n\n"
    '  perdollar compare vit-b16 "4x g5.2xlarge spot" "4x g5.4xlarge spot" "1x g5.12xlarge on-demand"\n'
    '  perdollar compare resnet50 "1x p4d.24xlarge spot @us-east-1" "8x g6e.xlarge spot" --samples 1e9\n'
    '  perdollar compare llama-3.1-8b "1x p5.48xlarge" "2x p4d.24xlarge" --tokens 2e10 --seq-len 4096\n\n'
    "A language model runs each configuration under the plan its label names, else --plan, else the "
    "planner's best for that machine; --seq-len, --micro-batch, --global-batch, --finetune and "
    "--attention-kernel describe the workload as for recommend."
)


def recommend(
    workload: str = typer.Argument(..., help="Built-in name (vit-b16, resnet50, …) or file.py:function."),
    samples: str | None = typer.Option(
        None, "--samples", help="Target samples to process, e.g. 1e9 or 250M."
    ),
    epochs: float | None = typer.Option(None, "--epochs", help="Target epochs (with --dataset-size)."),
    dataset_size: str | None = typer.Option(None, "--dataset-size", help="Samples per epoch, e.g. 1.28M."),
    deadline: str | None = typer.Option(None, "--deadline", help="Finish within this time, e.g. 72h or 3d."),
    budget: float | None = typer.Option(None, "--budget", help="Expected cost cap in USD."),
    objective: str = typer.Option(
        "samples-per-dollar", "--objective", help="samples-per-dollar | time | cost | weighted."
    ),
    weights: str | None = typer.Option(None, "--weights", help="For --objective weighted: time=1,cost=2."),
    confidence: float = typer.Option(0.9, "--confidence", help="Required P(finish by --deadline)."),
    market: str = typer.Option("any", "--market", help="on-demand | spot | any."),
    cloud: list[str] = typer.Option([], "--cloud", help="Allowed cloud (repeatable): aws, gcp, azure."),
    region: list[str] = typer.Option([], "--region", help="Allowed region or pattern (repeatable): us-*."),
    max_nodes: int = typer.Option(4, "--max-nodes", help="Largest node count tried (1, 2, 4, … up to it)."),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Per-device batch size."),
    precision: str | None = typer.Option(
        None, "--precision", help="fp32, tf32, amp-bf16, amp-fp16, bf16, fp16;"
        " language models also fp8 (FP8 linear layers, a scale per tensor) and fp8-rowwise"
        " (torchao's row-wise recipe).",
    ),
    measure: bool = typer.Option(False, "--measure", help="Benchmark locally first and calibrate from it."),
    measurements: Path | None = typer.Option(
        None, "--measurements", help="Measured throughput (published CSV schema or bench JSON)."
    ),
    checkpoint_seconds: float | None = typer.Option(
        None, "--checkpoint-seconds", help="Checkpoint write time (default: state size / 250 MB/s + 5 s)."
    ),
    restart_minutes: float | None = typer.Option(
        None, "--restart-minutes", help="Restart after an interruption (default 10)."
    ),
    interruption_rate: str | None = typer.Option(
        None, "--interruption-rate", help="Monthly interruption share for every spot offer, e.g. 10%."
    ),
    top: int = typer.Option(10, "--top", help="Rows to show."),
    show_excluded: bool = typer.Option(
        False, "--show-excluded", help="Also list excluded candidates and why."
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output on stdout."),
    store_url: str | None = typer.Option(None, "--store", help="Store the result in this SQLAlchemy URL."),
    no_store: bool = typer.Option(False, "--no-store", help="Do not store the result."),
    report: Path | None = typer.Option(None, "--report", help="Also write an HTML report to this file."),
    inference: bool = typer.Option(False, "--inference", help="Serving: rank by cost per million requests."),
    qps: float | None = typer.Option(None, "--qps", help="--inference: target requests per second."),
    p99_ms: float | None = typer.Option(None, "--p99-ms", help="--inference: p99 latency SLO (ms)."),
    p95_ms: float | None = typer.Option(None, "--p95-ms", help="--inference: p95 latency SLO (ms)."),
    max_wait_ms: float | None = typer.Option(
        None, "--max-wait-ms", help="--inference: batching wait cap (ms)."
    ),
    tokens: str | None = llm_options.TOKENS,
    seq_len: int | None = llm_options.SEQ_LEN,
    micro_batch: int | None = llm_options.MICRO_BATCH,
    global_batch: int | None = llm_options.GLOBAL_BATCH,
    plan: str | None = llm_options.PLAN,
    activation_checkpointing: bool = llm_options.ACTIVATION_CHECKPOINTING,
    tensor_parallel: int | None = llm_options.TENSOR_PARALLEL,
    pipeline_parallel: int | None = llm_options.PIPELINE_PARALLEL,
    finetune: str | None = llm_options.FINETUNE,
    lora_rank: int | None = llm_options.LORA_RANK,
    attention_kernel: str | None = llm_options.ATTENTION_KERNEL,
    framework: str | None = llm_options.FRAMEWORK,
    rps: float | None = typer.Option(None, "--rps", help="Language model --inference: requests per second."),
    tokens_per_day: str | None = typer.Option(
        None, "--tokens-per-day", help="Language model --inference: output tokens a day (instead of --rps)."
    ),
    input_tokens: int | None = typer.Option(
        None, "--input-tokens", help="Language model --inference: prompt tokens per request (default 1000)."
    ),
    output_tokens: int | None = typer.Option(
        None,
        "--output-tokens",
        help="Language model --inference: tokens generated per request (default 300).",
    ),
    lengths_file: Path | None = typer.Option(
        None, "--lengths-file",
        help="Language model --inference: real requests' token lengths (CSV or JSON Lines) instead of "
        "--input-tokens/--output-tokens.",
    ),
    ttft_p99_ms: float | None = typer.Option(
        None, "--ttft-p99-ms", help="Language model: time to first token SLO."
    ),
    tpot_p99_ms: float | None = typer.Option(
        None, "--tpot-p99-ms", help="Language model: time per output token SLO."
    ),
) -> int:
    check_store(store_url, enabled=not no_store)
    if report is not None:  # before the work: a file that may not be replaced is said at once
        from perdollar.report.html import check_report_target

        check_report_target(report)
    if top < 1:
        raise PerdollarError(f"--top must be at least 1, got {top}", "give e.g. --top 10")
    spot = SpotSettings(
        checkpoint_seconds=checkpoint_seconds,
        restart_minutes=restart_minutes,
        interruption_rate=recommend_inputs.interruption_rate_from_text(interruption_rate),
    )
    if inference and looks_like_llm(workload):
        from perdollar.cli.llm_inference_cmd import (
            llm_serving_question,
            recommend_llm_inference,
            request_lengths,
        )

        lengths = request_lengths(lengths_file, input_tokens, output_tokens)
        return recommend_llm_inference(
            llm_serving_question(
                workload,
                rps=rps,
                tokens_per_day=tokens_per_day,
                input_tokens=lengths.input_tokens if lengths else input_tokens,
                output_tokens=lengths.output_tokens if lengths else output_tokens,
                ttft_p99_ms=ttft_p99_ms,
                tpot_p99_ms=tpot_p99_ms,
                precision=precision,
                market=market,
                clouds=cloud,
                regions=region,
            ),
            top=top,
            json_output=json_output,
            store_url=store_url,
            store=not no_store,
            report_path=report,
            lengths_note=lengths.note if lengths else None,
        )
    if inference:
        from perdollar.cli.inference_cmd import recommend_inference

        return recommend_inference(
            serving_question(
                workload,
                qps=qps,
                p99_ms=p99_ms,
                p95_ms=p95_ms,
                max_wait_ms=max_wait_ms,
                batch_size=batch_size,
                precision=precision,
                market=market,
                clouds=cloud,
                regions=region,
            ),
            top=top,
            json_output=json_output,
            store_url=store_url,
            store=not no_store,
            report_path=report,
        )
    token_target, language_model = recommend_inputs.language_model_settings(
        workload,
        tokens=tokens,
        samples=samples,
        seq_len=seq_len,
        micro_batch=micro_batch,
        global_batch=global_batch,
        plan=plan,
        activation_checkpointing=activation_checkpointing,
        tensor_parallel=tensor_parallel,
        pipeline_parallel=pipeline_parallel,
        finetune=finetune,
        lora_rank=lora_rank,
        attention_kernel=attention_kernel,
        framework=framework,
    )
    question = recommend_inputs.training_question(
        workload,
        samples=samples,
        epochs=epochs,
        dataset_size=dataset_size,
        deadline=deadline,
        budget=budget,
        objective=objective,
        weights=weights,
        confidence=confidence,
        market=market,
        clouds=cloud,
        regions=region,
        max_nodes=max_nodes,
        batch_size=batch_size,
        precision=precision,
        spot=spot,
        top=top,
        token_target=token_target,
        language_model=language_model,
    )
    with common.progress("recommend", quiet=json_output) as handle:

        def say(message: str) -> None:
            handle.update(description=message)

        found = recommend_inputs.load_measurements(measurements)
        spec = None
        if measure:
            spec = load_workload(workload, batch_size=batch_size, precision=precision)
            found += recommend_inputs.measure_here(spec, json_output, store_url, not no_store)
        recommendation = answer(
            question,
            workload=spec,
            measurements=found,
            store_url=store_url,
            use_store=not no_store,
            progress=say,
        )
    from perdollar.cli.persist import attempt_store, save_recommendation

    stored, store_failure = attempt_store(
        lambda: save_recommendation(recommendation, store_url=store_url, enabled=not no_store)
    )
    if report is not None:
        from perdollar.report.html import write_report

        write_report(recommendation, report)
    show_recommendation(
        recommendation,
        stored_id=stored,
        report=report,
        json_output=json_output,
        top=top,
        show_excluded=show_excluded,
        unit=recommendation.sample_unit,
    )
    if store_failure is not None:
        raise store_failure
    return EXIT_OK


def compare_command(
    workload: str = typer.Argument(..., help="Built-in name (vit-b16, resnet50, …) or file.py:function."),
    configs: list[str] = typer.Argument(..., help='Configurations, e.g. "4x g5.2xlarge spot".'),
    samples: str | None = typer.Option(None, "--samples", help="Target samples (adds E[time], E[cost])."),
    deadline: str | None = typer.Option(None, "--deadline", help="Adds P(finish by the deadline)."),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Per-device batch size."),
    precision: str | None = typer.Option(
        None, "--precision", help="fp32, tf32, amp-bf16, amp-fp16, bf16, fp16;"
        " language models also fp8 (FP8 linear layers, a scale per tensor) and fp8-rowwise"
        " (torchao's row-wise recipe).",
    ),
    measurements: Path | None = typer.Option(
        None, "--measurements", help="Measured throughput (published CSV schema or bench JSON)."
    ),
    checkpoint_seconds: float | None = typer.Option(
        None, "--checkpoint-seconds", help="Checkpoint write time."
    ),
    restart_minutes: float | None = typer.Option(
        None, "--restart-minutes", help="Restart time (default 10)."
    ),
    interruption_rate: str | None = typer.Option(
        None, "--interruption-rate", help="Monthly interruption share for every spot offer, e.g. 10%."
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output on stdout."),
    store_url: str | None = typer.Option(
        None, "--store", help="Calibrate from the measurements stored at this SQLAlchemy URL."
    ),
    no_store: bool = typer.Option(False, "--no-store", help="Ignore stored measurements."),
    tokens: str | None = llm_options.TOKENS,
    seq_len: int | None = llm_options.SEQ_LEN,
    micro_batch: int | None = llm_options.MICRO_BATCH,
    global_batch: int | None = llm_options.GLOBAL_BATCH,
    plan: str | None = llm_options.PLAN,
    activation_checkpointing: bool = llm_options.ACTIVATION_CHECKPOINTING,
    tensor_parallel: int | None = llm_options.TENSOR_PARALLEL,
    pipeline_parallel: int | None = llm_options.PIPELINE_PARALLEL,
    finetune: str | None = llm_options.FINETUNE,
    lora_rank: int | None = llm_options.LORA_RANK,
    attention_kernel: str | None = llm_options.ATTENTION_KERNEL,
    framework: str | None = llm_options.FRAMEWORK,
) -> int:
    token_target, language_model = recommend_inputs.language_model_settings(
        workload,
        tokens=tokens,
        samples=samples,
        seq_len=seq_len,
        micro_batch=micro_batch,
        global_batch=global_batch,
        plan=plan,
        activation_checkpointing=activation_checkpointing,
        tensor_parallel=tensor_parallel,
        pipeline_parallel=pipeline_parallel,
        finetune=finetune,
        lora_rank=lora_rank,
        attention_kernel=attention_kernel,
        framework=framework,
    )
    target_samples = token_target or recommend_inputs.target_samples(samples, None, None)
    deadline_hours = common.parse_duration_hours(deadline, "--deadline") if deadline else None
    if deadline_hours and not target_samples:
        raise PerdollarError("--deadline needs a target", "add --samples N (--tokens N for a language model)")
    question = Question(
        workload_name=canonical_spec(workload),
        target_samples=target_samples,
        deadline_hours=deadline_hours,
        batch_size=batch_size,
        precision=precision,
        spot=SpotSettings(
            checkpoint_seconds=checkpoint_seconds,
            restart_minutes=restart_minutes,
            interruption_rate=recommend_inputs.interruption_rate_from_text(interruption_rate),
        ),
        language_model=language_model,
    )
    with common.progress("compare", quiet=json_output) as handle:

        def say(message: str) -> None:
            handle.update(description=message)

        answer = compare_question(
            question,
            configs,
            measurements=recommend_inputs.load_measurements(measurements),
            store_url=store_url,
            use_store=not no_store,
            progress=say,
        )
    show_comparison(
        answer.comparison,
        workload=workload,
        catalog_captured_at=answer.catalog_captured_at,
        assumptions=answer.assumptions,
        unit=answer.sample_unit,
        has_target=bool(target_samples),
        deadline_hours=deadline_hours,
        json_output=json_output,
    )
    return EXIT_OK


def register(app: typer.Typer) -> None:
    """Add ``recommend`` and ``compare`` to ``app``."""
    app.command("recommend", help=RECOMMEND_HELP, no_args_is_help=True)(recommend)
    app.command("compare", help=COMPARE_HELP, no_args_is_help=True)(compare_command)
