"""The profiler calls an unmodified Lightning `Trainer.fit` makes, with its action names,
on the default PassThroughProfiler: EPOCHS epochs of BATCHES batches, each fetch, training
step, backward and optimizer step inside its action. Run with Lightning, or with the
stand-in (test/doubles/lightning_standin) on PYTHONPATH. Also: an action whose block
raises (the stop still comes), a start with a name that is not a str (ignored), and a
second thread's own action. Prints the counts it made, as JSON; with `simple`, Lightning's
SimpleProfiler records the same actions and the JSON also holds its total seconds per
action ("simple_total_s"). With `advanced`, Lightning's AdvancedProfiler runs cProfile
around each action (the program's own profiler replacing the profile function). With `pytorch` (needs torch), Lightning's PyTorchProfiler
opens a record_function scope "[pl][profile]X" around each action X; `pytorch_stray`
also opens one such scope outside any action (its calls then differ from the action's):
"[pl][profile]run_training_epoch".

    python3 lightning_loop.py [EPOCHS BATCHES [simple|advanced|pytorch|pytorch_stray]]"""
import json
import sys
import threading

from lightning.pytorch import profilers

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
BATCHES = int(sys.argv[2]) if len(sys.argv) > 2 else 4
MODE = sys.argv[3] if len(sys.argv) > 3 else "none"
SIMPLE = MODE == "simple"
if SIMPLE:
    profiler = profilers.SimpleProfiler()
elif MODE == "advanced":
    profiler = profilers.AdvancedProfiler()
elif MODE.startswith("pytorch"):
    profiler = profilers.PyTorchProfiler()
else:
    profiler = profilers.PassThroughProfiler()
made = {}


def action(name):
    made[name] = made.get(name, 0) + 1
    return profiler.profile(name)


def work(n):
    return sum(i * i for i in range(n))


def batches():
    for b in range(BATCHES):
        yield work(2000) + b


def fit():
    with action("[Callback]ModelCheckpoint.on_fit_start"):
        work(500)
    for _ in range(EPOCHS):
        with action("run_training_epoch"):
            it = batches()
            for _ in range(BATCHES):
                with action("[_TrainingEpochLoop].train_dataloader_next"):
                    next(it)
                with action("run_training_batch"):
                    with action("[LightningModule]Model.optimizer_step"):
                        with action("[Strategy]SingleDeviceStrategy.training_step"):
                            work(5000)
                        with action("[Strategy]SingleDeviceStrategy.backward"):
                            work(8000)
                        with action("[LightningModule]Model.optimizer_zero_grad"):
                            work(100)
            try:
                with action("[Callback]TQDMProgressBar.on_train_epoch_end"):
                    raise ValueError("a hook that raises")
            except ValueError:
                pass


if MODE == "none":
    profiler.start(42)  # not an action name: ignored
    profiler.stop(42)


def worker_main():
    with action("worker_action"):
        work(1000)


worker = threading.Thread(target=worker_main)
worker.start()
worker.join()
fit()
if MODE == "pytorch_stray":
    from torch.autograd.profiler import record_function
    with record_function("[pl][profile]run_training_epoch"):
        work(100)
if SIMPLE:
    made["simple_total_s"] = {k: sum(v) for k, v in profiler.recorded_durations.items()}
print(json.dumps(made, sort_keys=True))
