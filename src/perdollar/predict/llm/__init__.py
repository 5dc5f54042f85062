"""Language-model training: plans, sharded memory, collectives, step time and the planner.

>>> plan = parse_plan("fsdp+ac,mb4")
>>> p = predict_llm_training(arch, accelerator, gpus_per_node=8, nodes=2, plan=plan, seq_len=4096,
...                          global_batch=512)
>>> p.tokens_per_second, p.mfu, p.memory_per_gpu_gib, p.plan.text(p.gpus)
"""

from perdollar.predict.llm.plan import FINETUNE_MODES, STRATEGIES, TrainingPlan, parse_plan
from perdollar.predict.llm.stage import LLMEfficiency
from perdollar.predict.llm.step import (
    MFU_CONVENTION,
    LLMTrainingPrediction,
    model_flops_per_token,
    predict_llm_training,
)

__all__ = [
    "FINETUNE_MODES",
    "MFU_CONVENTION",
    "STRATEGIES",
    "LLMEfficiency",
    "LLMTrainingPrediction",
    "TrainingPlan",
    "model_flops_per_token",
    "parse_plan",
    "predict_llm_training",
]
