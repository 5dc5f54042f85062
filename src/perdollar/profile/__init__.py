"""Profiles: what a workload does per operator and how much memory a step needs, without running it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perdollar.profile.model import MemoryBreakdown, OperatorRecord, Profile

if TYPE_CHECKING:
    from perdollar.profile.profiler import profile_workload

__all__ = ["MemoryBreakdown", "OperatorRecord", "Profile", "profile_workload"]


def __getattr__(name: str) -> object:
    # Tracing needs torch; importing it lazily keeps the data model (and the CLI's start) light.
    if name == "profile_workload":
        from perdollar.profile.profiler import profile_workload

        return profile_workload
    raise AttributeError(f"module 'perdollar.profile' has no attribute {name!r}")
