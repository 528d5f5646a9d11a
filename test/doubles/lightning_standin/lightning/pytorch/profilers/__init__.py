"""Stand-in for `lightning.pytorch.profilers` (see ../../../README.md)."""
from lightning.pytorch.profilers.base import PassThroughProfiler
from lightning.pytorch.profilers.profiler import Profiler
from lightning.pytorch.profilers.simple import SimpleProfiler

__all__ = ["Profiler", "PassThroughProfiler", "SimpleProfiler"]
