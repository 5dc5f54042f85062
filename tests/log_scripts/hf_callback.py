"""A Trainer run on a tiny GPT-2 with perdollar's callback; prints what both measured as JSON."""

import json
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from perdollar.integrations.hf import PerdollarCallback

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64))


class RandomTokens(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int) -> dict:
        ids = torch.randint(0, 100, (24,))
        return {"input_ids": ids, "labels": ids}


output, store_url = sys.argv[1], sys.argv[2]
callback = PerdollarCallback(price_per_hour=2.0, warmup_steps=10, store_url=store_url)
arguments = TrainingArguments(
    output_dir=output, max_steps=120, per_device_train_batch_size=4, report_to=[], logging_steps=20,
    disable_tqdm=True, save_strategy="no", use_cpu=True,
)  # fmt: skip
trainer = Trainer(model=model, args=arguments, train_dataset=RandomTokens(), callbacks=[callback])
metrics = trainer.train().metrics
measured = callback.measurement
print(json.dumps({
    "trainer_samples_per_second": metrics["train_samples_per_second"],
    "readings": len(callback.readings),
    "stored_id": callback.stored_id,
    "median": measured.samples_per_second.median,
    "extra": measured.extra,
}))  # fmt: skip
