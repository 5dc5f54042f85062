"""Where a question's kind is decided: once, when the :class:`Question` is built.

Whether a workload is a language model (planned from its architecture, counted in tokens) or a
network traced op by op is read from its name here and nowhere else; everything downstream reads
``question.family``. The plan flags a user may give beside ``--plan`` are merged into the plan
token here too, so that recommend, compare and predict fix a plan the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from perdollar import amounts
from perdollar.errors import PerdollarError
from perdollar.question import Declared, LanguageModelSettings, Question, declared
from perdollar.vocabulary import TOKEN_SERVING_OBJECTIVE, Family


@dataclass(frozen=True, slots=True)
class PlanFlags:
    """Parts of a training plan given apart from ``--plan``; merged into its token once."""

    activation_checkpointing: bool = declared(
        False,
        "--activation-checkpointing",
        "With --plan: recompute activations in the backward.",
        scope="training",
    )
    tensor_parallel: int | None = declared(
        None,
        "--tensor-parallel",
        "With --plan (or --inference): tensor-parallel GPUs inside a host.",
        unit="GPUs",
        minimum=1,
    )
    pipeline_parallel: int | None = declared(
        None,
        "--pipeline-parallel",
        "With --plan (or --inference): pipeline stages, across hosts or inside one.",
        unit="stages",
        minimum=1,
    )
    virtual_stages: int | None = declared(
        None,
        "--virtual-stages",
        "Interleaved 1F1B: model chunks per pipeline rank.",
        minimum=1,
        scope="instance",
    )
    context_parallel: int | None = declared(
        None,
        "--context-parallel",
        "Ranks splitting each sequence (ring attention).",
        unit="GPUs",
        minimum=1,
        scope="instance",
    )
    expert_parallel: int | None = declared(
        None,
        "--expert-parallel",
        "Mixture of experts: ranks splitting the routed experts.",
        unit="GPUs",
        minimum=1,
        scope="instance",
    )
    cpu_offload: bool = declared(
        False, "--cpu-offload", "With a fixed plan: keep the optimizer state on the CPU.", scope="instance"
    )

    def merged_into(self, plan: str) -> str:
        """``plan`` as a token with these flags applied."""
        from perdollar.predict.llm import parse_plan

        fixed = parse_plan(plan)
        fixed = replace(
            fixed,
            activation_checkpointing=fixed.activation_checkpointing or self.activation_checkpointing,
            cpu_offload=fixed.cpu_offload or self.cpu_offload,
            tensor_parallel=self.tensor_parallel or fixed.tensor_parallel,
            pipeline_parallel=self.pipeline_parallel or fixed.pipeline_parallel,
        )
        return fixed.token()


def given_flags(settings: object) -> list[str]:
    """The command-line flags of ``settings``' declared fields that differ from their defaults."""
    out = []
    for item in fields(settings):  # type: ignore[arg-type]
        option = item.metadata.get("option")
        value = getattr(settings, item.name)
        if isinstance(option, Declared) and value != item.default:
            # A switch declared as "--on/--off" is named by the side that was given.
            names = option.flag.split("/")
            out.append(names[0] if value or len(names) == 1 else names[1])
    return out


def is_language_model_name(workload_name: str) -> bool:
    from perdollar.workload.llm import looks_like_llm

    return looks_like_llm(workload_name)


def family_of(workload_name: str) -> Family:
    return "language-model" if is_language_model_name(workload_name) else "network"


def decided(question: Question) -> Question:
    """``question`` with its family decided (as built by the CLI, or by hand from Python).

    A language model always carries its settings (empty ones when none were given), so that the
    stored question says what it was asked as.
    """
    if question.family is not None:
        return question
    language_model = (
        question.language_model is not None
        or question.goal.objective == TOKEN_SERVING_OBJECTIVE
        or is_language_model_name(question.workload_name)
    )
    if not language_model:
        return replace(question, family="network")
    return replace(
        question, family="language-model", language_model=question.language_model or LanguageModelSettings()
    )


def language_model_settings(
    workload: str,
    settings: LanguageModelSettings,
    plan_flags: PlanFlags,
    *,
    tokens: str | None = None,
    samples: str | None = None,
) -> tuple[float | None, LanguageModelSettings | None]:
    """A language model's target in tokens and its settings, the plan flags merged into its plan;
    (None, None) for other workloads, which may not be given language-model settings."""
    given = given_flags(plan_flags) + (["--tokens"] if tokens is not None else []) + given_flags(settings)
    if not is_language_model_name(workload):
        if given:
            from perdollar.workload.llm import near_language_model

            near = near_language_model(workload)
            fix = (
                f"did you mean {near!r}?"
                if near
                else ("give a language model (llama-3.1-8b, a config.json …) or drop them")
            )
            raise PerdollarError(
                f"{', '.join(given)} apply to language models only, and {workload!r} is not one", fix
            )
        return None, None
    if samples:
        raise PerdollarError(
            "a language model's target is counted in tokens", f"write --tokens {samples} instead of --samples"
        )
    plan_given = given_flags(plan_flags)
    if settings.plan is not None:
        settings = replace(settings, plan=plan_flags.merged_into(settings.plan))
    elif plan_given:
        raise PerdollarError(
            f"{', '.join(plan_given)} fix part of a plan, and the planner searches every plan unless one"
            " is given",
            "give the whole plan, e.g. --plan fsdp --tensor-parallel 2 (or drop them)",
        )
    target = amounts.count(tokens, "--tokens") if tokens else None
    return target, settings
