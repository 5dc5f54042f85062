"""Traced profiles of the built-in reference workloads shipped with the package, so that neither
a first question about ``vit-b16`` nor the validation of the predictor waits for a trace.

The file holds every reference at its default shape (training at its batch, serving at each batch
of the serving ladder) and the shapes the validation set asks for. It is keyed by the workload's
fingerprint, which changes whenever the workload's computation does, so a stale entry is never
used: a workload whose fingerprint is not in the file is traced live. A test keeps the file in
step with the references; ``python -m perdollar.profile.shipped`` writes it again.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path

from perdollar.profile.model import Profile
from perdollar.profile.profile_store import profile_from_dict, profile_to_dict
from perdollar.vocabulary import Kind

SHIPPED_FILE = "data/reference_profiles.json.gz"
# The forward-pass batches a serving question traces (``predict.network_serving.plans.DEFAULT_BATCH_SIZES``,
# which this stage may not import; a test keeps the two equal).
SERVING_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)


@lru_cache(maxsize=1)
def _shipped_documents() -> dict[str, dict[str, object]]:
    try:
        blob = resources.files("perdollar.profile").joinpath(SHIPPED_FILE).read_bytes()
        payload = json.loads(gzip.decompress(blob))
    except (OSError, ValueError):
        return {}
    return payload if isinstance(payload, dict) else {}


def shipped_profile(fingerprint: str) -> Profile | None:
    """The shipped profile of ``fingerprint``, or None (only that one is built: the file holds
    about a hundred and fifty)."""
    document = _shipped_documents().get(fingerprint)
    return profile_from_dict(document) if document is not None else None


def shipped_profiles() -> dict[str, Profile]:
    """Every shipped profile, by fingerprint."""
    return {key: profile_from_dict(p) for key, p in _shipped_documents().items()}


def shipped_path() -> Path:
    return Path(__file__).parent / SHIPPED_FILE


def write_profiles(profiles: Mapping[str, Profile], path: Path | None = None) -> None:
    """Write ``profiles`` to the shipped file (byte for byte the same for the same profiles)."""
    payload = {key: profile_to_dict(p) for key, p in sorted(profiles.items())}
    target = path or shipped_path()
    target.write_bytes(gzip.compress(json.dumps(payload, separators=(",", ":")).encode(), mtime=0))


def default_shapes() -> list[tuple[str, int | None, Kind]]:
    """(reference, batch, kind) of every shape a first question about a built-in traces."""
    from perdollar.workload.references import REFERENCES

    shapes: list[tuple[str, int | None, Kind]] = []
    for name in REFERENCES:
        shapes.append((name, None, "train"))
        shapes += [(name, batch, "inference") for batch in SERVING_BATCHES]
    return shapes


def traced_defaults(shapes: Iterable[tuple[str, int | None, Kind]]) -> dict[str, Profile]:
    """A fresh trace of each shape (imports torch; minutes for all of them)."""
    from perdollar.profile.profiler import _traced
    from perdollar.workload.loader import load_workload

    traced: dict[str, Profile] = {}
    for name, batch, kind in shapes:
        workload = load_workload(name, batch_size=batch, kind=kind)
        print(f"  tracing {name} ({kind}, batch {workload.batch_size})", flush=True)
        traced[workload.fingerprint] = _traced(workload)
    return traced


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m perdollar.profile.shipped",
        description="Trace every built-in reference at its default shapes and write them into the "
        "shipped profiles, beside the validation set's (which `python -m perdollar.predict.lab.fit` writes).",
    )
    parser.parse_args(argv)
    profiles = {**shipped_profiles(), **traced_defaults(default_shapes())}
    write_profiles(profiles)
    print(f"wrote {len(profiles)} profiles to {shipped_path()}")


if __name__ == "__main__":
    main()
