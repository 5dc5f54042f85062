"""The decoder-layer traces shipped with the package: used without tracing, and not stale."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perdollar.profile import llm_trace, llm_trace_store
from perdollar.workload.llm import load_llm_workload

FIRST_USE = """
import sys
from perdollar.profile.llm_trace import layer_trace
from perdollar.workload.llm import load_llm_workload
workload = load_llm_workload("llama-3.1-8b")
trace = layer_trace(workload.architecture, 4, workload.seq_len)
assert trace.layer_ops and trace.layer_saved_bytes > 0
print("transformers imported" if "transformers" in sys.modules else "no transformers")
"""


def test_a_built_in_model_is_priced_from_the_shipped_trace_without_transformers(tmp_path: Path) -> None:
    env = {**os.environ, "PERDOLLAR_HOME": str(tmp_path)}  # an empty data directory: nothing traced yet
    done = subprocess.run(
        [sys.executable, "-c", FIRST_USE], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "no transformers"
    assert not list(tmp_path.glob("llm-traces/*.json"))  # nothing was traced and stored


@pytest.mark.parametrize("train_base", [True, False])
def test_the_shipped_trace_is_what_the_tracer_makes_today(train_base: bool) -> None:
    # Fails when the tracer, the fusion rule or a bundled config changes without
    # `python -m perdollar.profile.llm_trace_bundle` being run again.
    workload = load_llm_workload("gpt-125m")
    arch, seq = workload.architecture, workload.seq_len
    key = llm_trace_store.shipped_key(arch, 1, seq, "amp-bf16", train_base)
    shipped = llm_trace_store.load_shipped(key)
    assert shipped is not None, "no shipped trace: run python -m perdollar.profile.llm_trace_bundle"
    fresh = llm_trace._trace_layers(arch, 1, seq, "amp-bf16", train_base)
    for field in dataclasses.fields(fresh):
        expected = getattr(fresh, field.name)
        if isinstance(expected, float):
            assert getattr(shipped, field.name) == pytest.approx(expected), field.name
        else:
            assert getattr(shipped, field.name) == expected, field.name
