"""``recommend LLM --inference``: the cheapest deployments of a language model within TTFT and TPOT,
asked through :mod:`perdollar.ask` (its question built in :mod:`perdollar.ask.building`)."""

from __future__ import annotations

from pathlib import Path

from perdollar.cli import common
from perdollar.errors import NothingFeasibleError
from perdollar.goals import served
from perdollar.question import Question


def recommend_llm_inference(
    question: Question,
    *,
    top: int,
    json_output: bool,
    store_url: str | None,
    store: bool,
    report_path: Path | None,
    lengths_note: str | None = None,
) -> int:
    from perdollar.ask.answer import ask_language_model_serving
    from perdollar.cli.llm_serving_recommend_render import (
        llm_deployment_rows,
        llm_deployment_table,
        llm_excluded_rows,
        missing_energy_line,
    )
    from perdollar.cli.persist import attempt_store, save_recommendation

    with common.progress("recommend --inference", quiet=json_output) as bar:
        answer = ask_language_model_serving(
            question, store_url=store_url, use_store=store,
            progress=lambda message: bar.update(description=message),
        )  # fmt: skip
    recommendation = answer.recommendation
    stored_id, store_failure = attempt_store(
        lambda: save_recommendation(recommendation, store_url=store_url, enabled=store)
    )
    if report_path is not None:
        from perdollar.report.html import write_report

        write_report(recommendation, report_path)
    rows = llm_deployment_rows(recommendation.estimates, top, recommendation.ties)
    excluded = llm_excluded_rows(recommendation.estimates)
    goal = served(question.goal)
    rps = goal.qps if goal else 0.0
    if json_output:
        common.emit_json(
            {
                "question": recommendation.question,
                "deployments": rows,
                "excluded": excluded,
                "explanation": recommendation.explanation,
                "notes": recommendation.notes,
                "catalog_captured_at": recommendation.catalog_captured_at,
                "recommendation_id": stored_id,
                **({"request_lengths": lengths_note} if lengths_note else {}),
            },
            table="deployments",
        )
    else:
        if rows:
            by_carbon = question.goal.objective == "carbon"
            table = llm_deployment_table(rows, answer.slo_label, rps, by_carbon=by_carbon)
            fitted = common.print_table(table)
            missing = missing_energy_line(rows, fitted.left_out)
            if missing:
                common.console.print(f"[dim]{missing}[/]", highlight=False)
        common.console.print(recommendation.explanation, highlight=False, markup=False)
        for note in (*recommendation.notes, *([lengths_note] if lengths_note else [])):
            common.console.print(note, highlight=False, markup=False)
        if stored_id:
            common.console.print(f"Stored as recommendation {stored_id}.", highlight=False)
    if not rows:
        reasons = "; ".join(f"{row['accelerator']}: {row['reason']}" for row in excluded[:3])
        raise NothingFeasibleError(
            f"no deployment serves {rps:g} requests/s within {answer.slo_label} ({reasons})",
            "relax the SLOs, lower the rate, or allow more clouds and markets",
        )
    if store_failure is not None:
        raise store_failure
    return 0
