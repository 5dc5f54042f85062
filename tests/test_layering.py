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
# work (inference_cmd's bench --inference measures, by design).
QUESTION_COMMANDS: dict[str, tuple[str, ...] | None] = {
    "recommend_cmd": None,
    "recommend_inputs": None,
    "recommend_options": None,
    "llm_inference_cmd": None,
    "llm_fleet_cmd": None,
    "fleet_history": None,
    "llm_compare_cmd": None,
    "inference_cmd": ("recommend_inference",),
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
