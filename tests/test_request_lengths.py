"""Serving plans from real requests' token lengths (`recommend LLM --inference --lengths-file`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.errors import PerdollarError
from perdollar.workload.llm.request_lengths import parse_request_lengths


def test_csv_lengths_summarise_by_mean_median_and_tail() -> None:
    rows = "\n".join(f"{100 * i},{i}" for i in range(1, 101))
    lengths = parse_request_lengths(f"input_tokens,output_tokens\n{rows}\n")
    assert lengths.requests == 100
    assert lengths.output.mean == pytest.approx(50.5) and lengths.output.p50 == pytest.approx(50.5)
    assert lengths.output.p99 == 99 and lengths.output.largest == 100
    assert lengths.input is not None and lengths.input.mean == pytest.approx(5050)


def test_json_lines_and_a_bare_column_read_the_same() -> None:
    values = [10, 20, 30, 1000]
    as_jsonl = parse_request_lengths("\n".join(json.dumps({"output_tokens": v}) for v in values))
    as_column = parse_request_lengths("\n".join(str(v) for v in values))
    assert as_jsonl == as_column and as_column.input is None
    assert as_column.output.mean == pytest.approx(265)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("x,y\n1,2\n", "no output_tokens column"),
        ("output_tokens\n12\n-3\n", "whole number"),
        ("output_tokens\n12\nabc\n", "not a number"),
        ('{"output_tokens": 5}\n[1, 2]\n', "not a JSON object"),
        ("input_tokens,output_tokens\n5,6\n,7\n", "all or none"),
        ("output_tokens\n0\n0\n", "0 tokens"),
    ],
)
def test_a_bad_lengths_file_is_one_line(text: str, says: str) -> None:
    with pytest.raises(PerdollarError) as refused:
        parse_request_lengths(text)
    assert says in refused.value.one_line() and "\n" not in refused.value.one_line()


QUESTION = ("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--ttft-p99-ms", "500",
            "--tpot-p99-ms", "50", "--no-store", "--json")  # fmt: skip


def test_recommend_plans_on_the_files_mean_lengths(tmp_path: Path) -> None:
    (tmp_path / "lengths.csv").write_text("input_tokens,output_tokens\n" + "\n".join(
        f"{600 + 40 * (i % 11)},{100 + 20 * (i % 21)}" for i in range(462)) + "\n")  # fmt: skip
    from_file = run_perdollar(*QUESTION, "--lengths-file", "lengths.csv", cwd=tmp_path, columns=200)
    assert from_file.returncode == 0, from_file.stderr[-1500:]
    answer = json.loads(from_file.stdout)
    settings = answer["question"]["language_model"]
    assert (settings["input_tokens"], settings["output_tokens"]) == (800, 300)
    assert "462 requests" in answer["request_lengths"]
    by_hand = json.loads(
        run_perdollar(
            *QUESTION, "--input-tokens", "800", "--output-tokens", "300", cwd=tmp_path, columns=200
        ).stdout
    )
    assert answer["deployments"][0] == by_hand["deployments"][0]
    both = run_perdollar(
        *QUESTION, "--lengths-file", "lengths.csv", "--output-tokens", "300", cwd=tmp_path, columns=200
    )
    assert both.returncode == 2 and "give one of them" in both.stderr
