"""A model's config.json is data from outside: every bad value is one line that names the key and the
fix, exit 2, never a traceback, whichever command reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar

BASE = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 256,
}  # fmt: skip
MOE = {"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2}

# name: (what replaces the base config's values, or the file's whole text; what the error names)
CASES: dict[str, tuple[dict[str, object] | str, str]] = {
    "hidden-zero": ({"hidden_size": 0}, "hidden_size"),
    "hidden-text": ({"hidden_size": "abc"}, "hidden_size"),
    "hidden-object": ({"hidden_size": {"width": 64}}, "hidden_size"),
    "hidden-nan": ({"hidden_size": float("nan")}, "hidden_size"),
    "hidden-negative": ({"hidden_size": -64}, "hidden_size"),
    "vocab-negative": ({"vocab_size": -1}, "vocab_size"),
    "layers-infinite": ({"num_hidden_layers": float("inf")}, "num_hidden_layers"),
    "layers-huge": ({"num_hidden_layers": 10**9}, "num_hidden_layers"),
    "heads-not-dividing": ({"num_attention_heads": 5, "num_key_value_heads": 5}, "num_attention_heads"),
    "more-kv-heads-than-heads": ({"num_key_value_heads": 8}, "num_key_value_heads"),
    "top-k-above-experts": ({**MOE, "num_experts_per_tok": 9}, "num_experts_per_tok"),
    "experts-negative": ({**MOE, "num_local_experts": -2}, "num_local_experts"),
    "nested-100000-deep": ("[" * 100_000 + "]" * 100_000, "nests"),
    "over-the-size-limit": (json.dumps({**BASE, "padding": "x" * (5 << 20)}), "bytes"),
}
PREDICT = ("predict", "{file}", "--instance", "p5.48xlarge")
INFERENCE = ("predict", "{file}", "--inference", "--accelerator", "H100")
INFERENCE += ("--input-tokens", "100", "--output-tokens", "10")
RECOMMEND = ("recommend", "{file}", "--tokens", "1e9")
PROFILE = ("profile", "{file}")
SOME = ("hidden-text", "layers-infinite", "heads-not-dividing", "top-k-above-experts", "nested-100000-deep")
RUNS = [(PREDICT, name) for name in CASES] + [(INFERENCE, name) for name in CASES]
RUNS += [(command, name) for command in (RECOMMEND, PROFILE) for name in SOME]


@pytest.mark.parametrize(("command", "name"), RUNS, ids=[f"{c[0]}{'-inference' * (c == INFERENCE)}-{n}"
                                                         for c, n in RUNS])  # fmt: skip
def test_a_bad_config_value_is_one_line_naming_the_key(
    command: tuple[str, ...], name: str, tmp_path: Path
) -> None:
    change, named = CASES[name]
    path = tmp_path / "config.json"
    path.write_text(change if isinstance(change, str) else json.dumps({**BASE, **change}))
    done = run_perdollar(*(part.format(file=path) for part in command))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-1500:]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr[-1500:]
    assert lines[0].startswith("perdollar: error:") and named in lines[0] and " — " in lines[0]
