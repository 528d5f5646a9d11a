"""Stand-in for Lightning's PyTorchProfiler, the part profrun sees: start(name) opens a
record_function scope "[pl][profile]" + name (one per name at a time, as Lightning's
_recording_map keeps them), stop(name) closes it. No torch.profiler is started."""
from torch.autograd.profiler import record_function

from lightning.pytorch.profilers.profiler import Profiler


class PyTorchProfiler(Profiler):
    def __init__(self):
        self._recording_map = {}

    def start(self, action_name):
        if action_name not in self._recording_map:
            # Lightning: "Add [pl][profile] in name for pytorch profiler to recognize"
            recording = record_function("[pl][profile]" + action_name)
            recording.__enter__()
            self._recording_map[action_name] = recording

    def stop(self, action_name):
        if action_name in self._recording_map:
            self._recording_map.pop(action_name).__exit__(None, None, None)
