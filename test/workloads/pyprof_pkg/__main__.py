from pyprof_pkg.work import run, tick

print("run", run(37), tick(1))
