"""Command-line options generated from the settings dataclasses that declare them.

A setting is declared once, on its dataclass field (``perdollar.question.declared``): flag, help,
unit, lower bound. :func:`takes` adds those options to a command and hands the command the built
dataclass instead of loose values, so ``recommend``, ``compare`` and ``predict`` take each setting
the same way — as vLLM builds its engine arguments from its config classes.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Literal, TypeVar, get_args, get_origin

import typer

from perdollar.errors import PerdollarError
from perdollar.question import Declared, declared
from perdollar.vocabulary import ANY_ENGINE, MarketChoice, ServingEngineName

F = TypeVar("F", bound=Callable[..., object])


@dataclass(frozen=True, slots=True)
class StoreChoice:
    """Where results are stored and stored measurements are read, or that neither happens."""

    store_url: str | None = declared(
        None,
        "--store",
        "The store: an SQLAlchemy URL (default: PERDOLLAR_STORE, else the SQLite file in perdollar's data"
        " directory).",
    )
    # Scoped: a command that only reads the store it is given takes --store alone.
    no_store: bool = declared(
        False, "--no-store", "Neither read stored measurements nor store the result.", scope="switch"
    )

    @property
    def enabled(self) -> bool:
        return not self.no_store


@dataclass(frozen=True, slots=True)
class Output:
    """Whether the answer goes to stdout as a document for programs instead of tables for people."""

    json_output: bool = declared(False, "--json", "Machine-readable output (JSON) on stdout.")


# Read by perdollar.cli.main before the arguments are parsed: it asks the command for its --json
# document and writes that document's main table as CSV. Every command with --json shows it.
CSV = Declared("--csv", "The main table (the --json document's rows) as CSV on stdout.")


@dataclass(frozen=True, slots=True)
class Group:
    """One settings dataclass a command takes, limited to the scopes that mean something to it.

    Its options are listed together in ``--help`` under ``panel`` (default: the keyword the
    command takes the group by, "plan_flags" → "Plan flags"); ``scope_panels`` lists a scope's
    options under a panel of their own instead (a language model's training and serving settings).
    """

    settings: type
    scopes: tuple[str, ...] | None = None  # None: every declared field
    panel: str = ""
    scope_panels: tuple[tuple[str, str], ...] = ()

    def panel_of(self, keyword: str, option: Declared) -> str:
        by_scope = dict(self.scope_panels)
        if option.scope in by_scope:
            return by_scope[option.scope]
        return self.panel or keyword.replace("_", " ").capitalize()

    def declarations(self) -> list[tuple[str, object, Declared, object]]:
        """(field name, default, declaration, annotation) of each field the command takes."""
        hints = typing.get_type_hints(self.settings)
        out = []
        for item in fields(self.settings):
            option = item.metadata.get("option")
            if not isinstance(option, Declared):
                continue
            if self.scopes is not None and option.scope and option.scope not in self.scopes:
                continue
            hint = hints[item.name]
            annotation: object
            if option.parse:
                annotation = str | None
            elif choices_of(hint):  # typer would print its own error: the text is checked here
                annotation = str | None if item.default is None else str
            else:
                annotation = hint
            out.append((item.name, item.default, option, annotation))
        return out


def choices_of(hint: object) -> tuple[str, ...]:
    """The values a ``Literal`` (or optional ``Literal``) annotation allows; () for any other."""
    for candidate in (hint, *get_args(hint)):
        if get_origin(candidate) is Literal:
            return tuple(str(value) for value in get_args(candidate))
    return ()


def checked_choice(text: str, choices: tuple[str, ...], flag: str) -> str:
    """``text`` as the choice it names (case aside), or the one-line refusal with the nearest."""
    for choice in choices:
        if text.strip().lower() == choice:
            return choice
    from perdollar.catalog.names import suggestion_text

    near = suggestion_text(text, choices)
    listed = ", ".join(choices)
    fix = f"{near} ({listed})" if near else f"choose one of {listed}"
    noun = flag.removeprefix("--").replace("-", " ")  # as the checks behind the command line word it
    raise PerdollarError(f"unknown {noun} {text!r} for {flag}", fix)


def _parsed(option: Declared, value: object, hint: object) -> object:
    if value is None:
        return value
    # A parsed or chosen option is declared to typer as text (``Group.declarations``).
    if option.parse:
        return PARSERS[option.parse](str(value), option.flag)
    choices = choices_of(hint)
    return checked_choice(str(value), choices, option.flag) if choices else value


def _share(text: str, flag: str) -> float:
    from perdollar.price.frame import monthly_fraction_from_text

    try:
        return monthly_fraction_from_text(text)
    except ValueError:
        raise PerdollarError(
            f"{flag} {text!r} is not a monthly fraction",
            "write it like 10% or 0.1 (share of instances interrupted per month)",
        ) from None


def _count(text: str, flag: str) -> float:
    from perdollar import amounts

    return amounts.count(text, flag)


def _markets(text: str, flag: str) -> str:
    from perdollar.ask.offers import market_names

    market_names(text)  # each name one of MarketChoice, with the nearest where it is not
    return text


def _engines(text: str, flag: str) -> str:
    """``text`` (an engine, a comma list of them, or any) as given, once each name is an engine;
    a build after ``@`` (``vllm@2024``) is the engine's to check, against its dated rows."""
    from perdollar.predict.llm_serving.engines import engine_key

    engines = get_args(ServingEngineName)
    for name in (part.strip() for part in text.split(",") if part.strip()):
        engine = name.split("@", 1)[0]
        if name.lower() != ANY_ENGINE and engine_key(engine) not in engines:
            from perdollar.catalog.names import suggestion_text

            near = suggestion_text(engine, engines)
            listed = f"{', '.join(engines)} (or {ANY_ENGINE})"
            fix = f"{near} ({listed})" if near else f"use one of {listed}"
            raise PerdollarError(f"unknown serving engine {name!r} for {flag}", fix)
    return text


PARSERS: dict[str, Callable[[str, str], float | str]] = {
    "share": _share, "count": _count, "markets": _markets, "engines": _engines,
}  # fmt: skip
# Parsers of a comma list of choices, and the Literal each name of the list must be.
CHOICE_LISTS: dict[str, object] = {"markets": MarketChoice, "engines": ServingEngineName}


# A language model's settings, split in --help between what trains it and what serves it.
LANGUAGE_MODEL_PANELS = (
    ("training", "Language model: training"),
    ("serving", "Language model: serving"),
    ("serving-slo", "Language model: serving"),
)


def _parameter(
    name: str, default: object, option: Declared, annotation: object, panel: str
) -> inspect.Parameter:
    numeric = annotation in (int, int | None, float, float | None)
    minimum = option.minimum if numeric else None  # None is typer's own default: no lower bound
    if annotation == tuple[str, ...] and isinstance(default, tuple):  # repeatable: click collects a list
        annotation, default = list[str], list(default)
    flags = (option.flag, *option.aliases, *((option.short,) if option.short else ()))
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(default, *flags, help=option.full_help, rich_help_panel=panel, min=minimum),
        annotation=annotation,
    )


def takes(**groups: type | Group) -> Callable[[F], F]:
    """Give the decorated command the options declared on each group's dataclass; the command
    receives, under each keyword, the dataclass built from them."""
    resolved = {name: g if isinstance(g, Group) else Group(g) for name, g in groups.items()}

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        kept = [p for p in signature.parameters.values() if p.name not in resolved]
        taken = {p.name for p in kept}
        added: list[inspect.Parameter] = []
        # Read once here, not on every call: type hints are resolved by evaluating the annotations.
        declarations = {keyword: group.declarations() for keyword, group in resolved.items()}
        hints = {keyword: typing.get_type_hints(group.settings) for keyword, group in resolved.items()}
        for keyword, fields_taken in declarations.items():
            for name, default, option, annotation in fields_taken:
                if name in taken:
                    raise TypeError(f"{command.__name__}: option {name} is declared twice")
                taken.add(name)
                panel = resolved[keyword].panel_of(keyword, option)
                added.append(_parameter(name, default, option, annotation, panel))

        @functools.wraps(command)
        def run(*args: object, **values: object) -> object:
            for keyword, group in resolved.items():
                built: dict[str, object] = {}
                for name, _default, option, annotation in declarations[keyword]:
                    value = _parsed(option, values.pop(name), hints[keyword][name])
                    if annotation == tuple[str, ...] and isinstance(value, list | tuple):
                        value = tuple(value)  # click collects a repeated option as a list
                    built[name] = value
                values[keyword] = group.settings(**built)
            return command(*args, **values)

        parameters = _ordered([*kept, *added])
        run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters} | {
            "return": signature.return_annotation
        }
        return typing.cast(F, run)

    return decorate


def _ordered(parameters: Iterable[inspect.Parameter]) -> list[inspect.Parameter]:
    """Positional parameters first (typer's arguments), then keyword-only ones (its options)."""
    items = list(parameters)
    positional = [p for p in items if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    return positional + [p for p in items if p.kind is inspect.Parameter.KEYWORD_ONLY]
