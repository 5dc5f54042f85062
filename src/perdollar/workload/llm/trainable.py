"""A language model as a workload that ``bench`` runs: its config built with random weights.

``perdollar bench CONFIG.json --nproc 2 --plan fsdp`` measures real training steps of the model a
config describes (random initialisation, random tokens, the causal-LM loss), at the config's
default sequence length and the micro-batch as the batch size. The measurement is filed under
this workload's fingerprint, which :func:`training_workload` derives from the language model's
own, so that predictions of the same model elsewhere find it (:mod:`perdollar.predict.llm.measured`).
LoRA and QLoRA are not run: bench trains every weight.
"""

from __future__ import annotations

import hashlib
import json
from functools import partial
from typing import TYPE_CHECKING

from perdollar.workload.llm.workload import LLMWorkload
from perdollar.workload.spec import Workload

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def build_causal_lm(config_json: str) -> PreTrainedModel:
    from perdollar.workload.llm.meta_model import build_model

    return build_model(json.loads(config_json))


def measurement_key(llm: LLMWorkload) -> str:
    """The store key of ``llm``'s training runs: the model and sequence length, whatever the
    micro-batch, precision or plan of a run (each run records those itself)."""
    payload = {"config": llm.config_json or repr(llm.architecture), "seq_len": llm.seq_len, "kind": "train"}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def training_workload(llm: LLMWorkload) -> Workload:
    """The Workload ``bench`` measures for ``llm``: one sequence per sample, tokens counted."""
    from perdollar.workload.references import inputs

    arch = llm.architecture
    return Workload(
        name=llm.name,
        model_factory=partial(build_causal_lm, llm.config_json),
        input_factory=partial(inputs.causal_lm, seq_len=llm.seq_len, vocab=arch.vocab_size),
        batch_size=llm.micro_batch or 1,
        precision=llm.precision,
        optimizer="adamw",
        learning_rate=1e-5,
        sample_unit="sequences",
        config={
            "seq_len": llm.seq_len,
            "vocab": arch.vocab_size,
            "tokens_per_sample": llm.seq_len,
            "measured_as": measurement_key(llm),
        },
        description=f"{llm.name} causal language-model training from its config (random weights), "
        f"sequence {llm.seq_len}",
    )
