"""A Hugging Face Trainer run on a tiny GPT-2 (CPU); prints the Trainer's own samples/s at the end."""

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64))


class RandomTokens(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 10_000

    def __getitem__(self, index: int) -> dict:
        ids = torch.randint(0, 100, (32,))
        return {"input_ids": ids, "labels": ids}


arguments = TrainingArguments(
    output_dir=sys.argv[1], max_steps=60, per_device_train_batch_size=8, report_to=[], logging_steps=20,
    disable_tqdm=False, save_strategy="no", use_cpu=True,
)  # fmt: skip
metrics = Trainer(model=model, args=arguments, train_dataset=RandomTokens()).train().metrics
print(f"TRUTH {metrics['train_samples_per_second']}")
