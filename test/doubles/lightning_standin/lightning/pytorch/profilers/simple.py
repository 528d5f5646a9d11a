"""Stand-in for Lightning's SimpleProfiler: wall time per action, from start to stop."""
import time

from lightning.pytorch.profilers.profiler import Profiler


class SimpleProfiler(Profiler):
    def __init__(self):
        self.current_actions = {}
        self.recorded_durations = {}

    def start(self, action_name):
        if action_name in self.current_actions:
            raise ValueError("Attempted to start %s which has already started." % action_name)
        self.current_actions[action_name] = time.monotonic()

    def stop(self, action_name):
        end = time.monotonic()
        if action_name not in self.current_actions:
            raise ValueError("Attempting to stop recording an action (%s) which was never "
                             "started." % action_name)
        start = self.current_actions.pop(action_name)
        self.recorded_durations.setdefault(action_name, []).append(end - start)
