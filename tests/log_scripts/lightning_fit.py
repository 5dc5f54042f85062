"""A Lightning fit of 16-sample batches (CPU); a callback prints the steady samples/s it timed itself."""

import time

import lightning as L
import torch

BATCH = 16


class Model(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))

    def training_step(self, batch: list, index: int) -> torch.Tensor:
        x, y = batch
        time.sleep(0.01)  # a steady pace, so the figure does not depend on a busy machine
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


class Clock(L.Callback):
    def on_train_batch_start(
        self, trainer: L.Trainer, module: L.LightningModule, batch: list, index: int
    ) -> None:
        if index == 30:
            self.start = time.perf_counter()

    def on_train_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        print(f"TRUTH {(trainer.global_step - 30) * BATCH / (time.perf_counter() - self.start):.3f}")


data = torch.utils.data.TensorDataset(torch.randn(BATCH * 200, 64), torch.randn(BATCH * 200, 1))
trainer = L.Trainer(
    max_steps=150, accelerator="cpu", logger=False, enable_checkpointing=False, enable_model_summary=False,
    callbacks=[Clock()],
)  # fmt: skip
trainer.fit(Model(), torch.utils.data.DataLoader(data, batch_size=BATCH))
