"""A package for `python -m pyprof_pkg`: the Python profiler's entry-point tests."""
