"""The dispatcher: who claims, and which thread a claimed job goes to (no database)."""

import threading
import time

from litejobs.jobs.claims import ClaimedJob
from litejobs.worker.dispatch import Dispatcher


def claimed(job_id: int) -> ClaimedJob:
    return ClaimedJob(job_id, "x", "default", f"k{job_id}", "", {}, 1, 1, job_id, "")


def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


class Waiter(threading.Thread):
    """A runner thread waiting for its next job; it never claims (its claim would fail)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        super().__init__(daemon=True)
        self.dispatcher = dispatcher
        self.got: ClaimedJob | None = None

    def run(self) -> None:
        self.got = self.dispatcher.next(self.refuse, wait=0.05)

    def refuse(self, limit: int) -> list[ClaimedJob]:
        raise AssertionError("the waiting thread claimed")


def idle_dispatcher(batch: int = 16) -> Dispatcher:
    """A dispatcher whose last claim came back short: no thread claims until it is poked."""
    dispatcher = Dispatcher(batch=batch)
    dispatcher._wanted = False  # as when a claim answers fewer jobs than it asked for
    return dispatcher


def test_a_wake_up_claims_on_the_calling_thread_for_a_waiting_thread():
    dispatcher = idle_dispatcher()
    waiter = Waiter(dispatcher)
    waiter.start()
    wait_until(lambda: dispatcher._waiting == 1)
    claims = []

    def claim(limit):
        claims.append((threading.current_thread(), limit))
        return [claimed(2)]

    dispatcher.claim_for_waiting(claim)
    waiter.join(5)
    # One job for the one thread waiting: a busy thread is not claimed for.
    assert claims == [(threading.current_thread(), 1)]
    assert waiter.got.id == 2
    assert dispatcher.claimed_total == 1


def test_a_wake_up_without_a_waiting_thread_leaves_the_claim_to_the_runners():
    dispatcher = idle_dispatcher()
    dispatcher.claim_for_waiting(lambda limit: [claimed(2)])  # every thread is busy
    assert dispatcher.claimed_total == 0
    # The next thread that is free claims.
    job = dispatcher.next(lambda limit: [claimed(3)])
    assert job.id == 3


def test_a_failed_wake_up_claim_leaves_the_claim_to_the_runners():
    dispatcher = idle_dispatcher()
    waiter = Waiter(dispatcher)
    waiter.refuse = lambda limit: [claimed(4)]  # this runner rides out the outage
    waiter.start()
    wait_until(lambda: dispatcher._waiting == 1)

    def broken(limit):
        raise ConnectionError("database gone")

    try:
        dispatcher.claim_for_waiting(broken)
    except ConnectionError:
        pass
    else:
        raise AssertionError("the claim's error was swallowed")
    waiter.join(5)
    assert waiter.got.id == 4


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def drain_batches(dispatcher: Dispatcher, clock: Clock, seconds_per_job: float, batches: int):
    """Take every job of ``batches`` full claims at a pace; answers each claim's limit."""
    limits: list[int] = []
    next_id = iter(range(1, 1_000_000))

    def full(limit: int) -> list[ClaimedJob]:
        limits.append(limit)
        return [claimed(next(next_id)) for _ in range(limit)]

    while len(limits) < batches:
        dispatcher.next(full)
        dispatcher.done_with_one()
        clock.now += seconds_per_job
    return limits


def test_a_claim_takes_one_job_for_each_free_thread_up_to_the_batch():
    for threads, batch, expected in [(1, 16, 1), (4, 16, 4), (4, 2, 2)]:
        dispatcher = idle_dispatcher(batch)
        waiters = [Waiter(dispatcher) for _ in range(threads)]
        for waiter in waiters:
            waiter.refuse = lambda limit: []
            waiter.start()
        wait_until(lambda d=dispatcher, n=threads: d._waiting == n)
        limits: list[int] = []

        def claim(limit: int, asked: list[int] = limits) -> list[ClaimedJob]:
            asked.append(limit)
            return [claimed(n) for n in range(limit)]

        dispatcher.claim_for_waiting(claim)
        wait_until(lambda d=dispatcher: not d._buffer)
        dispatcher.stop()
        for waiter in waiters:
            waiter.join(5)
        assert limits == [expected], (threads, batch)
        assert sum(waiter.got is not None for waiter in waiters) == expected


def test_a_slow_job_is_not_claimed_for_a_busy_thread():
    """A worker with one thread running a long job leaves the next one to another worker."""
    clock = Clock()
    dispatcher = Dispatcher(batch=16, monotonic=clock)
    assert drain_batches(dispatcher, clock, seconds_per_job=2.0, batches=3) == [1, 1, 1]


def test_a_backlog_of_quick_jobs_is_claimed_in_larger_batches_up_to_eight():
    clock = Clock()
    dispatcher = Dispatcher(batch=16, monotonic=clock)
    # 10,000 jobs a second: 20 ms of them is 200, capped at 8 batches of 16.
    limits = drain_batches(dispatcher, clock, seconds_per_job=0.0001, batches=4)
    assert limits == [1, 128, 128, 128]


def test_a_claim_takes_what_the_threads_get_through_in_twenty_ms():
    clock = Clock()
    dispatcher = Dispatcher(batch=16, monotonic=clock)
    # 2,000 jobs a second: 40 in 20 ms.
    assert drain_batches(dispatcher, clock, seconds_per_job=0.0005, batches=3) == [1, 40, 40]


def test_a_claim_after_an_idle_spell_takes_one_job_per_free_thread():
    clock = Clock()
    dispatcher = Dispatcher(batch=16, monotonic=clock)
    drain_batches(dispatcher, clock, seconds_per_job=0.0001, batches=2)
    limits = []
    dispatcher.next(lambda limit: limits.append(limit) or [claimed(999_999)])  # the buffer's last
    clock.now += 60  # idle
    while dispatcher._buffer:
        dispatcher.next(lambda limit: [])
    dispatcher.poke()
    dispatcher.next(lambda limit: limits.append(limit) or [claimed(1_000_001)])
    assert limits[-1] == 1
