"""Stand-in for `lightning.pytorch.profilers` (see ../../../README.md)."""
from lightning.pytorch.profilers.base import PassThroughProfiler
from lightning.pytorch.profilers.profiler import Profiler

__all__ = ["Profiler", "PassThroughProfiler"]
