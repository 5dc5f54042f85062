"""The application layer: a typed :class:`~perdollar.question.Question` in, a Recommendation out.

It loads the workload and the catalog once, profiles, calibrates from stored and given
measurements, predicts, prices and ranks — for training and serving alike — passing each stage
once, left to right; a question with traffic over a day is answered by a fleet
(:mod:`perdollar.ask.fleet`). Every question is built in :mod:`perdollar.ask.building`, from the
command line's options or the Python API's arguments. The command line, the report, ``compare``,
``sweep`` and ``history reevaluate`` all ask through it.

>>> from perdollar.ask import recommend
>>> recommend("vit-b16", samples=1e9, deadline_hours=72, max_nodes=4).estimates[0].label
"""

from perdollar.ask.answer import answer, ask_serving, recommend
from perdollar.ask.compare import compare
from perdollar.ask.inputs import Inputs, load_inputs, measurements_from_file, stored_measurements
from perdollar.ask.network import answer_training, priced_candidates
from perdollar.ask.network_serving import ServingAnswer, answer_serving

__all__ = [
    "Inputs",
    "ServingAnswer",
    "answer",
    "answer_serving",
    "answer_training",
    "ask_serving",
    "compare",
    "load_inputs",
    "measurements_from_file",
    "priced_candidates",
    "recommend",
    "stored_measurements",
]
