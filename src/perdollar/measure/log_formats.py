"""Throughput as training loops print it: tqdm, the Hugging Face Trainer, Lightning, Keras, plain rates.

Each format turns a line into a rate in its own unit (samples, tokens, iterations or steps per
second). Iterations and steps become samples only with the batch size; without it the figure is
never called samples. When a log carries several formats (the Trainer prints a tqdm bar and a
final summary), the most direct one wins: a run's own samples/s over a steady bar's it/s.
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

KNOWN_FORMATS: tuple[LogFormat, ...] = (
    HF_SAMPLES, HF_STEPS, TOKENS, SAMPLES, IMAGES, KERAS_MS, KERAS_US, KERAS_S, TQDM_RATE, TQDM_TIME,
)  # fmt: skip

UNITS = ("samples", "tokens", "iterations", "steps")


def user_format(pattern: re.Pattern[str], unit: str) -> LogFormat:
    """``--pattern REGEX --unit UNIT``: the user's regex, its number in a ``value`` group or the first."""
    return LogFormat(f"--pattern ({unit}/s)", pattern, unit, priority=100)


def best_format(counts: dict[str, int], formats: tuple[LogFormat, ...]) -> LogFormat | None:
    """Of the formats that matched at least one line, the one the result should be read from."""
    matched = [f for f in formats if counts.get(f.name)]
    return max(matched, key=lambda f: f.priority) if matched else None
