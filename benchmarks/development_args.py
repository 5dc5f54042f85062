"""The command line that the accuracy benchmarks share: the shared data folder, then their options."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from perdollar.predict.lab.development import DevelopmentSet, load_development_set


def parse_development_args(
    doc: str | None, add_options: Callable[[argparse.ArgumentParser], None] | None = None
) -> tuple[argparse.Namespace, DevelopmentSet]:
    """Parsed arguments and the development set, or a one-line usage error naming the missing file."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path, help="the shared data folder (measurements/published_dev.csv)")
    if add_options:
        add_options(parser)
    args = parser.parse_args()
    try:
        return args, load_development_set(args.data_dir)
    except FileNotFoundError as exc:
        parser.error(str(exc))
