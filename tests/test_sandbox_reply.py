"""A sandboxed child's reply is read as data: whatever the user's code wrote there, nothing in it
runs in perdollar's process."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from perdollar import sandbox
from perdollar.profile.profiler import _traced
from perdollar.workload import load_workload


class _Calls:
    """Pickles as a call of ``function(*arguments)``, as a hostile reply would."""

    def __init__(self, function: Any, *arguments: Any) -> None:
        self.function, self.arguments = function, arguments

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.function, self.arguments)


def _hostile_calls(marker: Path) -> list[Any]:
    import os

    from perdollar import cache

    source = f"open({str(marker)!r}, 'w').write('ran')"
    return [
        _Calls(exec, source),
        _Calls(eval, source),
        _Calls(os.system, f"touch {marker}"),
        _Calls(Path.write_text, marker, "ran"),
        _Calls(cache.write_json, marker, {"ran": True}),  # perdollar's own functions are not records
    ]


@pytest.mark.parametrize("case", range(5))
def test_a_reply_that_calls_a_function_runs_nothing(tmp_path: Path, case: int) -> None:
    marker = tmp_path / "marker"
    reply = tmp_path / "reply.pickle"
    reply.write_bytes(pickle.dumps({"value": _hostile_calls(marker)[case]}))
    read = sandbox._read_reply(reply)
    assert read["status"] == "error" and "does not read" in read["reason"]
    assert not marker.exists()


def test_a_reply_naming_the_command_line_module_is_refused(tmp_path: Path) -> None:
    reply = tmp_path / "reply.pickle"
    # ``perdollar.__main__`` runs the command line when imported.
    reply.write_bytes(b"cperdollar.__main__\nmain\n.")  # protocol 0: GLOBAL, then STOP
    read = sandbox._read_reply(reply)
    assert read["status"] == "error" and "perdollar.__main__" in read["reason"]


def test_a_reply_of_records_and_plain_values_is_read_whole(tmp_path: Path) -> None:
    from collections import OrderedDict, defaultdict
    from datetime import UTC, datetime

    profile = _traced(load_workload("mlp"))
    value = {
        "profile": profile,
        "when": datetime(2026, 1, 2, tzinfo=UTC),
        "where": Path("/tmp/x"),
        "groups": defaultdict(list, {"a": [1, 2]}),
        "order": OrderedDict(b=2),
        "shapes": frozenset({(1, 2)}),
    }
    reply = tmp_path / "reply.pickle"
    reply.write_bytes(pickle.dumps({"value": value}))
    assert sandbox._read_reply(reply)["value"] == value
