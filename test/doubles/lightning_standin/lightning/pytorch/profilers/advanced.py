"""Stand-in for Lightning's AdvancedProfiler: one cProfile.Profile per action name,
enabled at the action's start and disabled at its stop, as Lightning's own does (a nested
action's profiler replaces the outer one's as the thread's profile function, and its
stop leaves none)."""
import cProfile

from lightning.pytorch.profilers.profiler import Profiler


class AdvancedProfiler(Profiler):
    def __init__(self):
        self.profiled_actions = {}

    def start(self, action_name):
        if action_name not in self.profiled_actions:
            self.profiled_actions[action_name] = cProfile.Profile()
        self.profiled_actions[action_name].enable()

    def stop(self, action_name):
        pr = self.profiled_actions.get(action_name)
        if pr is None:
            raise ValueError("Attempting to stop recording an action (%s) which was never "
                             "started." % action_name)
        pr.disable()
