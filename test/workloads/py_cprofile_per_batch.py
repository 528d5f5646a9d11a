"""A training loop that runs cProfile itself around each batch, as Lightning's
profiler="advanced" does per action: 3 epochs of 10 batches, each batch inside its own
cProfile.Profile enable/disable, the optimizer step after it. Prints what the program's
own profilers counted, summed over the batches."""
import cProfile
import pstats


def load(i):
    return [i] * 8


def batch(data):
    return sum(x * x for x in data)


def step(i):
    return i + 1


def epoch(e, counted):
    for b in range(10):
        prof = cProfile.Profile()
        prof.enable()
        batch(load(b))
        prof.disable()
        for k, v in pstats.Stats(prof).stats.items():
            counted[k[2]] = counted.get(k[2], 0) + v[1]
        step(b)


def main():
    counted = {}
    for e in range(3):
        epoch(e, counted)
    print("own cProfile counted load %d batch %d" % (counted.get("load", 0),
                                                     counted.get("batch", 0)))


if __name__ == "__main__":
    main()
