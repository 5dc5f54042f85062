"""The Python forms of ``perdollar predict`` and ``perdollar compare``, for notebooks and scripts.

``recommend`` is in :mod:`perdollar.ask.answer`; all three are exported at the package's top
level (``perdollar.recommend(...)``) and return results with ``.to_frame()`` and a compact display.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from perdollar import amounts
from perdollar.ask.building import api_comparison_question
from perdollar.ask.compare import compare_question
from perdollar.ask.inputs import measurements_from_file
from perdollar.errors import PerdollarError
from perdollar.measure.result import Measurement
from perdollar.predict.model import Prediction
from perdollar.select.compare import Comparison
from perdollar.workload import Workload


def predict(
    workload: str,
    instance: str,
    *,
    nodes: int = 1,
    cloud: str | None = None,
    batch_size: int | None = None,
    precision: str | None = None,
    measurements: Sequence[Measurement] | str = (),
) -> Prediction:
    """Throughput of ``workload`` on ``nodes`` × ``instance``, with its band, basis and bottleneck.

    ``measurements`` (a list, or the path of a bench JSON / published-schema CSV) calibrate it.

    >>> predict("vit-b16", "g5.2xlarge").samples_per_second
    """
    from perdollar.ask.network_prediction import predict_network
    from perdollar.ask.questions import family_of

    if not isinstance(workload, Workload):
        amounts.text(workload, "workload", "vit-b16")
    amounts.text(instance, "instance", "g5.2xlarge")
    amounts.check_value("nodes", nodes, integer=True)
    amounts.optional(batch_size, "batch_size", integer=True)
    if isinstance(workload, str) and family_of(workload) == "language-model":
        raise PerdollarError(
            f"{workload} is a language model: its prediction needs a training plan",
            f"use perdollar.recommend({workload!r}, samples=TOKENS) or `perdollar predict {workload}`",
        )
    found = measurements_from_file(Path(measurements)) if isinstance(measurements, str) else measurements
    return predict_network(
        workload, instance, nodes=nodes, cloud=cloud, batch_size=batch_size, precision=precision,
        measurements=found,
    ).prediction  # fmt: skip


def compare(
    workload: str,
    *configurations: str,
    samples: float | str | None = None,
    deadline_hours: float | str | None = None,
    budget_usd: float | None = None,
    confidence: float = 0.9,
) -> Comparison:
    """Configurations side by side, in the words ``recommend`` prints them, against the cheapest.

    >>> compare("vit-b16", "4x g5.2xlarge spot", "1x g5.12xlarge on-demand", samples=1e9).to_frame()
    """
    question = api_comparison_question(
        workload, configurations, samples=samples, deadline_hours=deadline_hours, budget_usd=budget_usd,
        confidence=confidence,
    )  # fmt: skip
    return compare_question(question, list(configurations)).comparison
