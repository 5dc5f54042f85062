"""Throughput as training loops print it: tqdm, the Hugging Face Trainer, Lightning, Keras, plain rates,
and the bare ``step N loss X`` lines of a hand-written loop.

Each format turns a line into a rate in its own unit (samples, tokens, iterations or steps per
second). A step counter prints no rate at all: its rate is the steps counted between two lines
over the time between them (:class:`CounterRate`). Iterations and steps become samples only with
the batch size; without it the figure is never called samples. When a log carries several
formats (the Trainer prints a tqdm bar and a final summary), the most direct one wins: a run's
own samples/s over a steady bar's it/s, and any printed rate over a count of steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUMBER = r"(?P<value>[0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
SI_SUFFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}


@dataclass(frozen=True, slots=True)
class LogFormat:
    name: str  # what the result says it read, e.g. "tqdm it/s"
    pattern: re.Pattern[str]
    unit: str  # samples | tokens | iterations | steps
    # A rate printed as time per unit (s/it, ms/step): the value is seconds (× scale) per unit.
    per_unit_time: bool = False
    scale: float = 1.0
    # The run's own figure over the whole run (the Trainer's summary), not a running reading.
    summary: bool = False
    # The value is a running count (``step 120``), not a rate: see CounterRate.
    counter: bool = False
    priority: int = 0  # higher wins when a log matches several formats

    def read(self, line: str) -> float | None:
        """The rate this line reports in ``unit`` per second, or None."""
        match = self.pattern.search(line)
        if not match:
            return None
        text = match.group("value") if "value" in self.pattern.groupindex else match.group(1)
        try:
            value = float(text.replace(",", ""))
        except (TypeError, ValueError):
            return None
        if "si" in self.pattern.groupindex:
            value *= SI_SUFFIX.get(match.group("si") or "", 1.0)
        value *= self.scale
        if self.per_unit_time:
            return 1.0 / value if value > 0 else None
        return value

    @property
    def needs_batch_size(self) -> bool:
        return self.unit in ("iterations", "steps")


def _compile(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


HF_SAMPLES = LogFormat(
    "Hugging Face Trainer train_samples_per_second",
    _compile(r"""['"]?train_samples_per_second['"]?\s*[:=]\s*['"]?""" + NUMBER),
    "samples",
    summary=True,
    priority=90,
)
HF_STEPS = LogFormat(
    "Hugging Face Trainer train_steps_per_second",
    _compile(r"""['"]?train_steps_per_second['"]?\s*[:=]\s*['"]?""" + NUMBER),
    "steps",
    summary=True,
    priority=50,
)
TOKENS = LogFormat(
    "tokens/s",
    _compile(NUMBER + r"\s*(?:tokens?|tok)\s*(?:/|per)\s*s(?:ec(?:ond)?)?\b"),
    "tokens",
    priority=80,
)
SAMPLES = LogFormat(
    "samples/s", _compile(NUMBER + r"\s*samples?\s*(?:/|per)\s*s(?:ec(?:ond)?)?\b"), "samples", priority=80
)
IMAGES = LogFormat(
    "img/s",
    _compile(NUMBER + r"\s*(?:img|imgs|images?)\s*(?:/|per)\s*s(?:ec(?:ond)?)?\b"),
    "samples",
    priority=80,
)
KERAS_MS = LogFormat(
    "Keras ms/step",
    _compile(NUMBER + r"\s*ms/step\b"),
    "steps",
    per_unit_time=True,
    scale=1e-3,
    priority=40,
)
KERAS_US = LogFormat(
    "Keras us/step",
    _compile(NUMBER + r"\s*(?:us|µs)/step\b"),
    "steps",
    per_unit_time=True,
    scale=1e-6,
    priority=40,
)
KERAS_S = LogFormat(
    "Keras s/step", _compile(NUMBER + r"\s*s/step\b"), "steps", per_unit_time=True, priority=40
)
# tqdm (and Lightning's tqdm bar): "35.12it/s", "1.2kit/s"; below one a second it prints "s/it".
TQDM_RATE = LogFormat("tqdm it/s", _compile(NUMBER + r"(?P<si>[kMG]?)it/s\b"), "iterations", priority=30)
TQDM_TIME = LogFormat(
    "tqdm s/it", _compile(NUMBER + r"s/it\b"), "iterations", per_unit_time=True, priority=30
)
# A hand-written loop's "step 120 loss 2.31", "Step 120/1000 | loss=2.31", "iter: 120, train_loss 2.3":
# a step counter on a line that reports a loss (without the loss, "step 3" may be anything).
STEP_LINES = LogFormat(
    "step N loss lines",
    _compile(r"\b(?:global[_ ]step|step|iter(?:ation)?)\s*[:=#]?\s*(?P<value>[0-9]+)\b(?=.*loss)"),
    "steps",
    counter=True,
    priority=10,
)

KNOWN_FORMATS: tuple[LogFormat, ...] = (
    HF_SAMPLES, HF_STEPS, TOKENS, SAMPLES, IMAGES, KERAS_MS, KERAS_US, KERAS_S, TQDM_RATE, TQDM_TIME,
    STEP_LINES,
)  # fmt: skip
# What `bench -- COMMAND` reads, in the words its help and its failures use.
KNOWN_FORMS = (
    "tqdm it/s and s/it, the Hugging Face Trainer's train_samples_per_second, Lightning's bar, Keras "
    "ms/step, 'N samples/s', 'N img/s', 'N tokens/s', and 'step N … loss X' lines (steps/s from the "
    "time between them)"
)

# A step counter's rate is taken over at least this long: lines that arrive together (a pipe
# delivers a buffered burst at once) would otherwise read as an endless rate.
COUNTER_WINDOW_S = 0.5

UNITS = ("samples", "tokens", "iterations", "steps")


class CounterRate:
    """Steps per second from a running step counter and the time each of its lines arrived."""

    def __init__(self, window_s: float = COUNTER_WINDOW_S) -> None:
        self.window_s = window_s
        self._anchor: tuple[float, float] | None = None  # (count, arrival time) the rate runs from

    def reading(self, count: float, at: float) -> float | None:
        """The rate since the anchor once at least a window has passed, else None."""
        if self._anchor is None or count <= self._anchor[0]:  # the first line, or a counter restarted
            self._anchor = (count, at)
            return None
        anchor_count, anchor_at = self._anchor
        if at - anchor_at < self.window_s:
            return None
        self._anchor = (count, at)
        return (count - anchor_count) / (at - anchor_at)


def user_format(pattern: re.Pattern[str], unit: str) -> LogFormat:
    """``--pattern REGEX --unit UNIT``: the user's regex, its number in a ``value`` group or the first."""
    return LogFormat(f"--pattern ({unit}/s)", pattern, unit, priority=100)


def best_format(counts: dict[str, int], formats: tuple[LogFormat, ...]) -> LogFormat | None:
    """Of the formats that matched at least one line, the one the result should be read from."""
    matched = [f for f in formats if counts.get(f.name)]
    return max(matched, key=lambda f: f.priority) if matched else None
