"""asyncio with several tasks: coroutines that suspend and resume (each resume is a call
for cProfile before 3.12, a PY_RESUME after), awaited chains, a queue between producer and
consumers, gather, async generators and comprehensions, a task cancelled while it waits,
an exception raised across an await. Everything is ordered by the event loop alone
(sleep(0), queues, events: no timers), so the counts depend only on this code.

    PYTHONPATH=test/workloads/site_preload python3 test/workloads/py_asyncio.py [scale]
"""
import asyncio
import gc
import sys


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


async def leaf(i):
    await asyncio.sleep(0)
    return fib(6 + i % 3)


async def middle(i):
    total = 0
    for k in range(3):
        total += await leaf(i + k)
    return total


async def producer(queue, n, consumers):
    for i in range(n):
        await queue.put(i)
        if i % 3 == 0:
            await asyncio.sleep(0)
    for _ in range(consumers):
        await queue.put(None)


async def consumer(queue, results):
    while True:
        item = await queue.get()
        if item is None:
            return
        results.append(await middle(item))


async def ticker(count):
    for i in range(count):
        yield i
        await asyncio.sleep(0)


async def collect(count):
    return [i * 2 async for i in ticker(count)]


class Failure(Exception):
    pass


async def fails_after_await(i):
    await asyncio.sleep(0)
    raise Failure(i)


async def catches(i):
    try:
        await fails_after_await(i)
    except Failure:
        return 1
    return 0


async def waits_forever(event):
    await event.wait()


async def cancelled_while_waiting():
    event = asyncio.Event()
    task = asyncio.ensure_future(waits_forever(event))
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return 1
    return 0


async def main_async(scale):
    queue = asyncio.Queue(maxsize=4)
    results = []
    consumers = [asyncio.ensure_future(consumer(queue, results)) for _ in range(3)]
    await producer(queue, 12 * scale, len(consumers))
    await asyncio.gather(*consumers)
    gathered = await asyncio.gather(*(middle(i) for i in range(5 * scale)))
    caught = sum(await asyncio.gather(*(catches(i) for i in range(4 * scale))))
    collected = await collect(6 * scale)
    cancelled = await cancelled_while_waiting()
    return sum(results), sum(gathered), caught, sum(collected), cancelled


def main(scale):
    gc.disable()  # collections would run at allocation counts, which the profiler changes
    loop = asyncio.new_event_loop()
    try:
        print("asyncio", loop.run_until_complete(main_async(scale)))
    finally:
        loop.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
