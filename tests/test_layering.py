"""The shape of the code: data flows one way, and nothing hides the absence of the project's own parts."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "perdollar"
# Left to right: a stage imports only the stages to its left (and the shared bottom).
PIPELINE = ("catalog", "workload", "profile", "measure", "predict", "price", "select", "report")
BOTTOM = {
    "errors", "vocabulary", "question", "fmt", "jsonable", "paths", "files", "frames", "configuration",
    "lifeline", "sandbox", "amounts", "cache", "terminal_tables", "goals", "question_json",
}  # fmt: skip
# Beside the pipeline: they may read its data types; the application layer and the CLI sit on top.
ALLOWED_BESIDE = {
    "store": BOTTOM | set(PIPELINE),
    "launch": BOTTOM | set(PIPELINE) | {"store"},
    "ask": BOTTOM | set(PIPELINE) | {"store", "launch"},
    # Callbacks inside the user's training loop: they measure and store, nothing more.
    "integrations": BOTTOM | {"catalog", "measure", "store"},
}


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """(imported perdollar module path, line) for every import of the project in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "perdollar":
                yield from ((f"perdollar.{alias.name}", node.lineno) for alias in node.names)
            elif node.module.startswith("perdollar."):
                yield node.module, node.lineno
        elif isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names if a.name.startswith("perdollar."))


def _top(module: str) -> str:
    return module.split(".")[1]


def _allowed(owner: str) -> set[str]:
    if owner in BOTTOM:
        return set(BOTTOM)
    if owner in PIPELINE:
        return BOTTOM | set(PIPELINE[: PIPELINE.index(owner) + 1])
    return ALLOWED_BESIDE.get(owner, set())


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_import_runs_with_the_data_flow(path: Path) -> None:
    owner = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    if owner in ("cli", "__main__", "__init__"):
        return  # the shells on top may use everything
    allowed = _allowed(owner)
    assert allowed, f"{owner} has no place in the layering: add it to PIPELINE, BOTTOM or ALLOWED_BESIDE"
    wrong = [(m, line) for m, line in _imports(path) if _top(m) not in allowed | {owner}]
    assert not wrong, f"{path.relative_to(PACKAGE)} imports against the data flow: {wrong}"


def test_the_runtime_predictor_never_imports_its_fitting_lab() -> None:
    runtime = [p for p in (PACKAGE / "predict").rglob("*.py") if "lab" not in p.relative_to(PACKAGE).parts]
    wrong = [
        (str(p.relative_to(PACKAGE)), m)
        for p in runtime
        for m, _ in _imports(p)
        if m.startswith("perdollar.predict.lab")
    ]
    assert not wrong


def test_no_fallback_stands_in_for_a_missing_part_of_the_project() -> None:
    offenders = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try):
                continue
            catches_import_error = any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers
            )
            imports_project = any(
                isinstance(n, ast.ImportFrom) and (n.module or "").startswith("perdollar")
                for stmt in node.body
                for n in ast.walk(stmt)
            )
            if catches_import_error and imports_project:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders


def test_no_module_grows_past_four_hundred_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long


# The commands that ask a question build it and have it answered through the application layer
# (perdollar.ask): at run time they import no stage that does the work. They may render through
# report and store through cli.persist; an import for a type annotation alone stays under
# TYPE_CHECKING. None: the whole module; otherwise the functions of a module that also does other
# work (network_serving_cmd's bench --inference measures, by design).
QUESTION_COMMANDS: dict[str, tuple[str, ...] | None] = {
    "recommend_cmd": None,
    "recommend_inputs": None,
    "recommend_options": None,
    "llm_serving_cmd": None,
    "fleet_cmd": None,
    "fleet_history": None,
    "llm_serving_compare_cmd": None,
    "network_serving_cmd": ("recommend_inference",),
    "store_cmd": ("reevaluate",),
}
WORKING_STAGES = {"catalog", "workload", "profile", "measure", "predict", "price", "select"}


def _runtime_imports(node: ast.AST) -> Iterator[tuple[str, int]]:
    """(imported perdollar module, line) for the imports under ``node`` that run: not those of an
    ``if TYPE_CHECKING:`` block."""
    if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
        yield from (i for child in node.orelse for i in _runtime_imports(child))
        return
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if node.module == "perdollar":
            yield from ((f"perdollar.{alias.name}", node.lineno) for alias in node.names)
        elif node.module.startswith("perdollar."):
            yield node.module, node.lineno
    elif isinstance(node, ast.Import):
        yield from ((a.name, node.lineno) for a in node.names if a.name.startswith("perdollar."))
    for child in ast.iter_child_nodes(node):
        yield from _runtime_imports(child)


@pytest.mark.parametrize("module", sorted(QUESTION_COMMANDS))
def test_question_commands_ask_through_the_application_layer(module: str) -> None:
    tree = ast.parse((PACKAGE / "cli" / f"{module}.py").read_text(encoding="utf-8"))
    functions = QUESTION_COMMANDS[module]
    scopes: list[ast.AST] = [tree] if functions is None else [
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in functions
    ]  # fmt: skip
    assert len(scopes) == (1 if functions is None else len(functions)), f"{module}: {functions} not found"
    found = [(m, line) for scope in scopes for m, line in _runtime_imports(scope)]
    wrong = [(m, line) for m, line in found if _top(m) in WORKING_STAGES]
    assert not wrong, f"cli/{module}.py reaches past perdollar.ask into the stages: {wrong}"


def _question_constructions(path: Path) -> list[int]:
    """Lines of ``path`` that call ``Question(...)`` (by name or as ``question.Question``)."""
    calls = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name == "Question":
                calls.append(node.lineno)
    return calls


def test_every_question_is_built_in_one_module() -> None:
    building = {
        str(p.relative_to(PACKAGE)): lines for p in _sources() if (lines := _question_constructions(p))
    }
    assert building.keys() == {"ask/building.py"}, building


# The rooms (kinds of question) keep one name in every stage: a module of a room is named
# network, network_serving, llm, llm_serving or fleet (docs/architecture.md lists them); "serving"
# alone is what both serving rooms share, and "inference" or "language_model" is no module's name.
ROOM_STAGES = ("predict", "price", "select", "report", "ask", "cli")
ROOM_MODULES = {
    ("predict", "network"): ("predict/frame.py", "predict/step.py"),
    ("predict", "network_serving"): ("predict/network_serving/",),
    ("predict", "llm"): ("predict/llm/",),
    ("predict", "llm_serving"): ("predict/llm_serving/",),
    ("predict", "fleet"): ("predict/llm_serving/fleet.py",),
    ("price", "network"): ("price/frame.py", "price/table.py", "price/bill.py"),
    ("price", "network_serving"): ("price/network_serving.py",),
    ("price", "llm_serving"): (
        "price/llm_serving.py",
        "price/llm_serving_bill.py",
        "price/llm_serving_energy.py",
    ),
    ("price", "fleet"): (
        "price/fleet.py",
        "price/fleet_floor.py",
        "price/fleet_limits.py",
        "price/fleet_options.py",
    ),
    ("select", "network"): ("select/ranking.py",),
    ("select", "network_serving"): ("select/network_serving.py",),
    ("select", "llm_serving"): ("select/llm_serving.py", "select/llm_serving_ties.py"),
    ("select", "fleet"): ("select/fleet.py",),
    ("report", "network"): ("report/html.py", "report/plots.py"),
    ("report", "llm_serving"): (
        "report/llm_serving_html.py",
        "report/llm_serving_plots.py",
        "report/llm_serving_sections.py",
    ),
    ("report", "fleet"): ("report/fleet_html.py",),
    ("ask", "network"): ("ask/network.py", "ask/network_prediction.py"),
    ("ask", "network_serving"): ("ask/network_serving.py",),
    ("ask", "llm"): ("ask/llm.py", "ask/llm_prediction.py"),
    ("ask", "llm_serving"): (
        "ask/llm_serving.py",
        "ask/llm_serving_prediction.py",
        "ask/llm_serving_compare.py",
        "ask/llm_serving_at_load.py",
    ),
    ("ask", "fleet"): ("ask/fleet.py", "ask/fleet_sizing.py"),
    ("cli", "network_serving"): ("cli/network_serving_cmd.py",),
    ("cli", "llm"): ("cli/llm_render.py",),
    ("cli", "llm_serving"): (
        "cli/llm_serving_cmd.py",
        "cli/llm_serving_compare_cmd.py",
        "cli/llm_serving_recommend_render.py",
        "cli/llm_serving_render.py",
    ),
    ("cli", "fleet"): ("cli/fleet_cmd.py", "cli/fleet_history.py"),
}
RETIRED_WORDS = ("inference", "language_model")
SHARED_BY_THE_SERVING_ROOMS = {"cli/serving_render.py"}


def _room_stage_modules() -> list[str]:
    return sorted(
        str(p.relative_to(PACKAGE)) for stage in ROOM_STAGES for p in (PACKAGE / stage).rglob("*.py")
    )


def test_every_room_module_is_where_its_name_says() -> None:
    missing = [m for modules in ROOM_MODULES.values() for m in modules if not (PACKAGE / m).exists()]
    assert not missing, f"room modules named in ROOM_MODULES but not there: {missing}"


def test_no_room_module_is_named_for_a_retired_word() -> None:
    retired = [m for m in _room_stage_modules() if any(word in m for word in RETIRED_WORDS)]
    assert not retired, f"name these for their room (network_serving, llm, llm_serving, fleet): {retired}"


def test_serving_alone_names_only_what_both_serving_rooms_share() -> None:
    unnamed_room = sorted(
        {
            m
            for m in _room_stage_modules()
            for part in Path(m).parts
            if (part in ("serving", "serving.py", "training.py") or part.startswith("serving_"))
            and m not in SHARED_BY_THE_SERVING_ROOMS
        }
    )
    assert not unnamed_room, f"say which room these serve (network_serving or llm_serving): {unnamed_room}"
