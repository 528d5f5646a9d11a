"""Stand-in for Lightning's profiler base class: the Trainer calls profile(name), which
calls start(name) and, however the block ends, stop(name)."""
from abc import ABC, abstractmethod
from contextlib import contextmanager


class Profiler(ABC):
    @abstractmethod
    def start(self, action_name):
        """Begins the action."""

    @abstractmethod
    def stop(self, action_name):
        """Ends the action."""

    @contextmanager
    def profile(self, action_name):
        try:
            self.start(action_name)
            yield action_name
        finally:
            self.stop(action_name)
