"""A program that runs cProfile itself, then prints what its own profiler counted."""
import cProfile
import pstats


def work(n):
    return sum(i * i for i in range(n))


def main():
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(25):
        work(100)
    prof.disable()
    stats = pstats.Stats(prof).stats
    calls = [v[1] for k, v in stats.items() if k[2] == "work"]
    print("own cProfile counted work", calls)
    for _ in range(5):
        work(10)  # after the program's profiler is off: ours again
    print("done")


if __name__ == "__main__":
    main()
