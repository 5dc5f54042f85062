"""Retired machines: listed with the reason and its source, never ranked."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.catalog.retired import read_retired_machines, with_retired_machines
from perdollar.predict.llm.frame import excluded_reason as llm_excluded_reason
from perdollar.predict.llm_serving.frame import llm_serving_frame
from perdollar.workload.llm import load_llm_workload

RETIRED = {
    ("aws", "p2.xlarge"): "CUDA 12.0",
    ("aws", "p2.16xlarge"): "CUDA 12.0",
    ("aws", "g2.8xlarge"): "CUDA 11.0",
    ("azure", "Standard_NC6s_v3"): "2025-09-30",
    ("azure", "Standard_NC24s_v3"): "2025-09-30",
}
RETIRED_FAMILIES = ("p2.", "g2.", "Standard_NC6s_v3", "Standard_NC12s_v3", "Standard_NC24s_v3")


def test_retired_machines_are_listed_with_the_reason_and_its_source() -> None:
    cat = catalog.load()
    sources = cat.manifest["retired_sources"]
    for (cloud, name), said in RETIRED.items():
        instance = cat.instance(name, cloud)
        assert instance.excluded_reason.startswith("retired: ") and said in instance.excluded_reason
        source = sources[f"{cloud}:{name}"]
        assert said in source and ("NVIDIA CUDA" in source or "Microsoft Learn" in source)
    # A size the retirement notice leaves out, and a current machine, stay usable.
    assert cat.instance("Standard_NC24rs_v3", "azure").excluded_reason == ""
    assert cat.instance("p3.2xlarge", "aws").excluded_reason == ""


def _estimates(*args: str) -> list[dict]:
    result = run_perdollar(*args, "--market", "on-demand", "--show-excluded", "--json", "--no-store")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["estimates"]


def test_a_retired_machine_is_not_ranked_and_is_listed_as_excluded_with_its_reason() -> None:
    estimates = _estimates("recommend", "mlp", "--samples", "1e9", "--cloud", "aws", "--cloud", "azure")
    retired = [e for e in estimates if e["instance_type"].startswith(RETIRED_FAMILIES)]
    # Excluded rows are shown one per chip and reason: each retired family is there, none ranked.
    assert {e["instance_type"][:2] for e in retired} == {"p2", "g2", "St"}
    assert all(not e["feasible"] and e["excluded_reason"].startswith("retired: ") for e in retired)
    assert [e for e in estimates if e["feasible"]]  # the current machines are still ranked
    shown = run_perdollar("recommend", "mlp", "--samples", "1e9", "--cloud", "aws", "--market", "on-demand",
                          "--show-excluded", "--no-store", "--top", "3")  # fmt: skip
    assert shown.returncode == 0 and "retired: Kepler K80" in shown.stdout


def test_language_model_training_refuses_a_retired_machine_whatever_the_precision() -> None:
    # fp16 runs on a V100, so only the retirement keeps the NCv3 sizes out of the ranking.
    cat = catalog.load()
    workload = load_llm_workload("llama-3.1-8b", precision="fp16")
    retired, current = cat.instance("Standard_NC24s_v3", "azure"), cat.instance("Standard_NC24rs_v3", "azure")
    assert "Azure retired the NCv3" in llm_excluded_reason(retired, cat.accelerator_of(retired), workload)
    assert llm_excluded_reason(current, cat.accelerator_of(current), workload) == ""


def test_a_reason_already_given_is_kept_and_patterns_match_whole_names(tmp_path: Path) -> None:
    table = tmp_path / "retired.csv"
    table.write_text(
        "cloud,instance_pattern,retired_on,excluded_reason,source\naws,p2.*,,retired: gone,a notice\n"
    )
    frame = pd.DataFrame({"cloud": ["aws", "aws", "aws"], "name": ["p2.xlarge", "p2.8xlarge", "p3.2xlarge"],
                          "excluded_reason": ["", "desktop only", ""]})  # fmt: skip
    out = with_retired_machines(frame, read_retired_machines(table))
    assert out["excluded_reason"].tolist() == ["retired: gone", "desktop only", ""]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("aws,p2.*,,gone,a notice", "does not start with 'retired: '"),
        ("aws,p2.*,2025-13-01,retired: gone,a notice", "retired_on '2025-13-01' is not a date"),
        ("aws,p2.*,,retired: gone,", "source empty"),
    ],
)
def test_a_bad_row_names_itself(tmp_path: Path, row: str, problem: str) -> None:
    table = tmp_path / "retired.csv"
    table.write_text(f"cloud,instance_pattern,retired_on,excluded_reason,source\n{row}\n")
    with pytest.raises(ValueError, match=r"retired\.csv row 2") as error:
        read_retired_machines(table)
    assert problem in str(error.value)


def test_a_serving_search_excludes_a_retired_machine_with_its_reason() -> None:
    frame = llm_serving_frame(
        load_llm_workload("gpt-125m").architecture, catalog.load(), input_tokens=500, output_tokens=100,
        rps=5, precisions=("fp16",), tensor_parallel_options=(1,),
    )  # fmt: skip
    rows = frame.set_index("instance_type")
    assert not rows.loc["Standard_NC6s_v3", "feasible"]
    assert rows.loc["Standard_NC6s_v3", "excluded_reason"].startswith("retired: Azure retired the NCv3")
    # The same V100 in a size that is still sold serves the small model.
    still_sold = rows.loc["Standard_NC24rs_v3"]
    assert still_sold["feasible"] and still_sold["excluded_reason"] == ""
