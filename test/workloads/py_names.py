"""Functions whose qualified names differ from co_name (test_python_layers.py)."""


class Outer:
    def method(self):
        return 1

    class Inner:
        def deep(self):
            return 2


def plain():
    return 3


Outer().method()
Outer.Inner().deep()
plain()
