"""Today's answers to the pinned questions, against the golden file or written into it.

    python benchmarks/pin_answers.py           # print what changed since the golden file
    python benchmarks/pin_answers.py --write   # write tests/data/pinned_answers.json

Every question of ``tests/pinned_figures.py`` is asked with ``--json --no-store`` on the bundled
catalog in a fresh interpreter, all in one empty data directory (so a workload is traced once).
Write the golden file only when an answer moved on purpose (a new catalog, refitted parameters, a
better model) and say why in the commit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pinned_figures import GOLDEN, QUESTIONS, ask, differences, ranked_rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help=f"write {GOLDEN.name} from today's answers")
    args = parser.parse_args()
    answers = {}
    with tempfile.TemporaryDirectory(prefix="perdollar-pin-") as home:
        for name, arguments in QUESTIONS.items():
            begin = time.perf_counter()
            answers[name] = {"arguments": list(arguments), "rows": ranked_rows(ask(arguments, Path(home)))}
            print(f"{time.perf_counter() - begin:6.1f} s  {name}: perdollar {' '.join(arguments)}")
    if args.write:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
        return
    pinned = json.loads(GOLDEN.read_text())
    changed = [
        line
        for name, answer in answers.items()
        for line in differences(name, pinned.get(name, {}).get("rows", {}), answer["rows"])
    ]
    print("\n".join(changed) or "every pinned answer is unchanged")
    if changed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
