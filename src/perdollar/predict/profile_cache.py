"""Traced reference profiles shipped as package data, so validation never waits for tracing.

Keyed by the workload fingerprint (which changes whenever the workload's computation does), so a
stale entry is never used: a workload whose fingerprint is not in the file is traced live.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from perdollar.profile.model import Profile
from perdollar.profile.profile_store import profile_from_dict, profile_to_dict

CACHE_FILE = "data/reference_profiles.json.gz"


@lru_cache(maxsize=1)
def shipped_profiles() -> dict[str, Profile]:
    try:
        blob = resources.files("perdollar.predict").joinpath(CACHE_FILE).read_bytes()
    except (FileNotFoundError, OSError):
        return {}
    return {key: profile_from_dict(p) for key, p in json.loads(gzip.decompress(blob)).items()}


def write_profiles(profiles: dict[str, Profile], path: Path) -> None:
    payload = {key: profile_to_dict(p) for key, p in sorted(profiles.items())}
    path.write_bytes(gzip.compress(json.dumps(payload, separators=(",", ":")).encode(), mtime=0))
