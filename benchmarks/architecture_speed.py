"""How long `perdollar recommend` of a language model takes once its architecture is cached.

    python benchmarks/architecture_speed.py [--baseline-src OTHER/src] [--repeat 3]

Runs `perdollar recommend MODEL --tokens 1e9 --top 1` as a user does (a fresh interpreter each
time) for a built-in model, a config.json of a family perdollar reads itself (Mixtral) and one of a
family it has transformers build on the meta device (GPT-NeoX, Pythia-1B's sizes). Each model's
first run fills the caches (layer traces, transformers' counts by role) in a data directory of its
own and is reported apart; the figures are the median of the runs after it, wall-clock and CPU
time (user and system of the child: steadier than the wall clock on a machine others share). With
--baseline-src the same runs are made with another checkout's source (say, before a change).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
MIXTRAL = {
    "model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
    "max_position_embeddings": 32768, "num_local_experts": 8, "num_experts_per_tok": 2,
}  # fmt: skip
PYTHIA_1B = {  # EleutherAI/pythia-1b config.json's sizes
    "model_type": "gpt_neox", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 8,
    "intermediate_size": 8192, "vocab_size": 50304, "max_position_embeddings": 2048,
    "rotary_pct": 0.25, "use_parallel_residual": True, "tie_word_embeddings": False,
}  # fmt: skip


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(source: Path, home: Path, model: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one recommend: on a shared machine the CPU time is the steadier."""
    env = {**os.environ, "PYTHONPATH": str(source), "PERDOLLAR_HOME": str(home), "COLUMNS": "200"}
    cpu = _cpu_of_children()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "perdollar", "recommend", model, "--tokens", "1e9", "--top", "1"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"recommend {model} failed: {done.stderr.strip().splitlines()[-1:]}")
    return seconds, _cpu_of_children() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src/ to time the same way")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        models = {"llama-3.1-8b (built-in)": "llama-3.1-8b"}
        for name, config in (("mixtral-8x7b", MIXTRAL), ("pythia-1b", PYTHIA_1B)):
            path = folder / f"{name}.json"
            path.write_text(json.dumps(config))
            models[f"{name} (config.json, {config['model_type']})"] = str(path)
        sources = {"this checkout": HERE}
        if args.baseline_src is not None:
            sources["baseline"] = args.baseline_src.resolve()
        header = f"{'model':<36} {'source':<14} {'first run':>16}"
        print(f"{header} {'cached, median wall':>20} {'cached, median CPU':>19}")
        for label, model in models.items():
            for which, source in sources.items():
                home = folder / f"home-{which.replace(' ', '-')}-{abs(hash(model))}"
                home.mkdir()
                first_wall, first_cpu = _run(source, home, model)
                runs = [_run(source, home, model) for _ in range(args.repeat)]
                wall = [w for w, _ in runs]
                cpu = [c for _, c in runs]
                first = f"{first_wall:.1f} s ({first_cpu:.1f} CPU)"
                wall_text = f"{statistics.median(wall):.2f} s (±{statistics.pstdev(wall):.2f})"
                cpu_text = f"{statistics.median(cpu):.2f} s (±{statistics.pstdev(cpu):.2f})"
                print(f"{label:<36} {which:<14} {first:>16} {wall_text:>20} {cpu_text:>19}")


if __name__ == "__main__":
    main()
