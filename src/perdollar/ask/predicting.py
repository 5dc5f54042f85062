"""One configuration predicted (``perdollar predict``): the same routing as a ranked question.

A prediction asks about one configuration the user names (an instance, or an accelerator and a
GPU count) rather than ranking the catalog, so it returns that configuration's figures instead of a
Recommendation; but its family and kind are decided once, from the workload and ``inference``,
and one route per (family, kind) answers it, as :data:`perdollar.ask.answer.ROUTES` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from perdollar.ask.questions import PlanFlags, family_of, language_model_settings
from perdollar.errors import PerdollarError
from perdollar.question import LanguageModelSettings
from perdollar.vocabulary import Family, Kind

if TYPE_CHECKING:
    from perdollar.ask.llm_serving_prediction import LanguageModelServingPrediction
    from perdollar.ask.network_prediction import NetworkPrediction

# What a route answers: a network's prediction, a language model's training document (as its JSON
# prints it) or its serving prediction.
ConfigurationPrediction: TypeAlias = "NetworkPrediction | dict[str, object] | LanguageModelServingPrediction"


@dataclass(frozen=True, slots=True)
class PredictionAsked:
    """What ``perdollar predict`` (or its Python form) asks: one configuration of one workload."""

    workload: str
    instance: str | None = None  # training, and a network: the instance type
    nodes: int = 1
    cloud: str | None = None
    batch_size: int | None = None
    precision: str | None = None
    inference: bool = False
    accelerator: str | None = None  # a language model served: the chip and how many
    gpus: int = 1
    settings: LanguageModelSettings = field(default_factory=LanguageModelSettings)
    flags: PlanFlags = field(default_factory=PlanFlags)
    measurements_file: Path | None = None
    data_bytes_per_sample: float | None = None
    input_rate_per_core: float | None = None
    # A language model served: the load to predict latencies at (requests in flight, or arriving a second).
    concurrency: int | None = None
    requests_per_second: float | None = None

    @property
    def family(self) -> Family:
        return family_of(self.workload)

    @property
    def kind(self) -> Kind:
        return "inference" if self.inference else "train"


@dataclass(frozen=True, slots=True)
class Reach:
    """Where a prediction may look besides its question, and where it reports."""

    store_url: str | None = None
    use_store: bool = False
    progress: Callable[[str], None] = lambda message: None
    note: Callable[[str], None] = lambda message: None


def _instance(asked: PredictionAsked) -> str:
    if asked.instance is None:
        raise PerdollarError("predict needs --instance", "add e.g. --instance g5.2xlarge")
    return asked.instance


def refuse_a_misplaced_load(asked: PredictionAsked) -> None:
    """--concurrency and --rps describe a served language model's traffic; elsewhere they would be ignored."""
    if asked.concurrency is None and asked.requests_per_second is None:
        return
    if asked.family == "language-model" and asked.inference:
        return
    flag = "--concurrency" if asked.concurrency is not None else "--rps"
    raise PerdollarError(
        f"{flag} is the load of a language model served (predict LLM --inference), not of this prediction",
        f"add --inference with a language model, or drop {flag}",
    )


def _network(asked: PredictionAsked, reach: Reach) -> NetworkPrediction:
    from perdollar.ask.inputs import measurements_from_file
    from perdollar.ask.network_prediction import predict_network

    refuse_a_misplaced_load(asked)
    instance = _instance(asked)
    language_model_settings(asked.workload, asked.settings, asked.flags)  # refuses them for a network
    found = measurements_from_file(asked.measurements_file) if asked.measurements_file is not None else []
    return predict_network(
        asked.workload, instance, nodes=asked.nodes, cloud=asked.cloud, batch_size=asked.batch_size,
        precision=asked.precision, measurements=found, store_url=reach.store_url, use_store=reach.use_store,
        data_bytes_per_sample=asked.data_bytes_per_sample, input_rate_per_core=asked.input_rate_per_core,
        progress=reach.progress, note=reach.note,
    )  # fmt: skip


def _language_model_training(asked: PredictionAsked, reach: Reach) -> dict[str, object]:
    from perdollar.ask.llm_prediction import predict_llm

    instance = _instance(asked)
    refuse_a_misplaced_load(asked)
    reach.progress(f"planning {asked.workload}")
    return predict_llm(
        asked.workload, instance, asked.cloud, asked.nodes, asked.precision, asked.settings, asked.flags,
        store_url=reach.store_url, read_store=reach.use_store, note=reach.note,
    )  # fmt: skip


def _served_on(asked: PredictionAsked) -> tuple[str | None, int]:
    """The chip and GPU count a served model is predicted on: ``--accelerator``/``--gpus``, or an
    instance's (``--instance p5.48xlarge`` is 8× H100, times ``--nodes``), as training names them."""
    if asked.instance is None:
        return asked.accelerator, asked.gpus
    from perdollar.catalog import load as load_catalog

    catalog = load_catalog()
    machine = catalog.instance(asked.instance, asked.cloud)
    if not machine.accelerator_key or machine.accelerator_count < 1:
        raise PerdollarError(
            f"{machine.name} has no whole accelerator to serve a language model on",
            "name a GPU instance, or give --accelerator and --gpus",
        )
    gpus = int(machine.accelerator_count) * asked.nodes
    named = catalog.accelerator(asked.accelerator).key if asked.accelerator is not None else None
    if named is not None and named != machine.accelerator_key:
        raise PerdollarError(
            f"--accelerator {asked.accelerator} and --instance {machine.name} ({machine.accelerator_key}) "
            "name two chips",
            "give --instance or --accelerator, not both",
        )
    if asked.gpus not in (1, gpus):  # 1 is the option's default
        raise PerdollarError(
            f"--gpus {asked.gpus} and --instance {machine.name} ({gpus} GPUs with --nodes {asked.nodes}) "
            "disagree",
            "leave out --gpus with --instance (use --nodes for more machines)",
        )
    return machine.accelerator_key, gpus


def _language_model_serving(asked: PredictionAsked, reach: Reach) -> LanguageModelServingPrediction:
    from perdollar.ask.llm_serving_prediction import predict_language_model_serving
    from perdollar.predict.llm_serving.offered_load import offered_load

    settings, flags = asked.settings, asked.flags
    load = offered_load(asked.concurrency, asked.requests_per_second)
    accelerator, gpus = _served_on(asked)
    return predict_language_model_serving(
        asked.workload, accelerator=accelerator, gpus=gpus, tensor_parallel=flags.tensor_parallel,
        pipeline_parallel=flags.pipeline_parallel or 1, input_tokens=settings.input_tokens,
        output_tokens=settings.output_tokens, precision=asked.precision, batch=asked.batch_size,
        engine=settings.engine, kv_precision=settings.kv_precision, expert_parallel=flags.expert_parallel,
        features=settings, load=load,
    )  # fmt: skip


# A network's prediction is its training throughput whatever ``inference`` says (serving a network
# is a latency curve: ``recommend --inference`` or ``bench --latency-curve``).
PREDICTION_ROUTES: dict[tuple[Family, Kind], Callable[[PredictionAsked, Reach], ConfigurationPrediction]] = {
    ("network", "train"): _network,
    ("network", "inference"): _network,
    ("language-model", "train"): _language_model_training,
    ("language-model", "inference"): _language_model_serving,
}


def predict_configuration(asked: PredictionAsked, reach: Reach | None = None) -> ConfigurationPrediction:
    """The figures of one configuration: a network's ``NetworkPrediction``, a language model's
    training document or its ``LanguageModelServingPrediction``."""
    return PREDICTION_ROUTES[(asked.family, asked.kind)](asked, reach or Reach())
