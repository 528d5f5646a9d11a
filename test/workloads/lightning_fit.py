"""A small real Lightning 2.x fit (Linear model, 2 epochs of 4 batches, validation of 2
batches) for the Lightning action-name tests; runs on CPU or the GPU Lightning picks.
With `simple`, Lightning's own SimpleProfiler records the actions and the script prints
each action's call count as JSON (the reference), with its share of run_training_epoch
(simple_epoch_percent); with `none` (the default profiler,
PassThroughProfiler) or `pytorch` (Lightning's PyTorchProfiler, which opens a
record_function scope "[pl][profile]X" around each action X) it prints {}.

    python3 lightning_fit.py simple|none|pytorch"""
import json
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning.pytorch as pl
except ImportError:  # the standalone package
    import pytorch_lightning as pl


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self.layer(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 32), torch.randint(0, 2, (64,)))
    return DataLoader(data, batch_size=8)


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "none"
    trainer = pl.Trainer(max_epochs=2, limit_train_batches=4, limit_val_batches=2,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False,
                         profiler=which if which in ("simple", "pytorch") else None)
    trainer.fit(Model(), loader(), loader())
    counts = {}
    if which == "simple":
        prof = trainer.profiler
        counts = {k: len(v) for k, v in prof.recorded_durations.items()}
        # SimpleProfiler's own share of run_training_epoch: of the time since it was made
        # (its report's base; read a little after its report, so a little less)
        counts["simple_epoch_percent"] = 100 * sum(prof.recorded_durations["run_training_epoch"]) \
            / (time.monotonic() - prof.start_time)
    print(json.dumps(counts, sort_keys=True))


if __name__ == "__main__":
    main()
