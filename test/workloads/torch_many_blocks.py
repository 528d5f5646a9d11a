"""Many CPU tensor blocks live at once, for the allocator hooks' block table (it starts
small and grows with the live blocks): BLOCKS tensors made on the main thread and BLOCKS
on a second thread, all alive together, then each set freed on the other thread. Sizes
vary with the index; one intra-op thread. Prints the bytes it allocated."""
import sys
import threading

import torch

BLOCKS = 5000
COLUMNS = 16
FLOAT = 4


def make(lo, hi):
    return [torch.empty(i % 7 + 1, COLUMNS) for i in range(lo, hi)]


def main():
    torch.set_num_threads(1)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else BLOCKS
    mine = make(0, n)
    theirs = []
    t = threading.Thread(target=lambda: theirs.extend(make(n, 2 * n)))
    t.start()
    t.join()
    print("bytes %d" % sum((i % 7 + 1) * COLUMNS * FLOAT for i in range(2 * n)))
    sys.stdout.flush()
    t = threading.Thread(target=mine.clear)  # the main thread's blocks freed on another
    t.start()
    t.join()
    theirs.clear()  # and the other thread's on the main thread


if __name__ == "__main__":
    main()
