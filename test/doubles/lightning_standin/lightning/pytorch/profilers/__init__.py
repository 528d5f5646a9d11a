"""Stand-in for `lightning.pytorch.profilers` (see ../../../README.md)."""
from lightning.pytorch.profilers.advanced import AdvancedProfiler
from lightning.pytorch.profilers.base import PassThroughProfiler
from lightning.pytorch.profilers.profiler import Profiler
from lightning.pytorch.profilers.simple import SimpleProfiler


def __getattr__(name):
    if name == "PyTorchProfiler":  # imports torch: only when asked for, as Lightning's own
        from lightning.pytorch.profilers.pytorch import PyTorchProfiler
        return PyTorchProfiler
    raise AttributeError(name)


__all__ = ["AdvancedProfiler", "Profiler", "PassThroughProfiler", "SimpleProfiler", "PyTorchProfiler"]
