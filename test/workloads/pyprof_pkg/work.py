def tick(i):
    return i * 2


def run(n):
    return sum(tick(i) for i in range(n))
