"""Local worker processes that survive a dead worker: each worker runs one job at a time, so
a worker that dies (SIGKILL, out of memory) costs only the job it held, which runs again on
a fresh worker a fixed number of times before it is reported failed."""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from typing import Any

__all__ = ["run_jobs"]


def _serve(conn: Connection, fn: Callable[..., Any]) -> None:
    """A worker's loop: runs each ``(index, args)`` it is sent and sends back ``(index, True,
    result)``, or ``(index, False, message)`` when ``fn`` raised; ``None`` or a closed pipe
    ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        while (job := conn.recv()) is not None:
            i, args = job
            try:
                reply = (i, True, fn(*args))
            except Exception as e:  # sent back as one line: the job failed, the worker lives
                reply = (i, False, " ".join(f"{type(e).__name__}: {e}".split()))
            conn.send(reply)
    except (EOFError, OSError):  # the parent is gone
        pass


@contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    """Ignores Ctrl-C while a worker starts, so the worker inherits it ignored from its very
    first instruction (a terminal sends Ctrl-C to the whole process group; the parent alone
    handles it). Only the main thread may change signal handling; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _exit_text(code: int | None) -> str:
    """A dead process's exit code in words: ``killed by SIGKILL``, ``exit code 1``."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class _Worker:
    """One worker process, its end of the pipe to it, and the job it holds (None when idle)."""

    def __init__(self, ctx: Any, fn: Callable[..., Any]) -> None:
        ours, theirs = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(theirs, fn), daemon=True)
        with _ctrl_c_ignored():
            self.process.start()
        theirs.close()  # now only the worker holds it: its death reads as end of file here
        self.conn: Connection = ours
        self.job: int | None = None

    def give(self, i: int, args: tuple) -> bool:
        """Sends job ``i``; False when the worker is already gone."""
        if not self.process.is_alive():
            return False
        try:
            self.conn.send((i, args))
        except OSError:
            return False
        self.job = i
        return True

    def stop(self, now: bool) -> None:
        """Ends the worker: asks it to finish, or with ``now`` kills it."""
        if not now:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


def run_jobs(
    fn: Callable[..., Any],
    jobs: Sequence[tuple],
    workers: int,
    retries: int,
    done: Callable[[int, Any], None],
    failed: Callable[[int, str], None],
) -> None:
    """Runs ``fn(*jobs[i])`` for every ``i`` on up to ``workers`` processes (``fn`` must be a
    module-level function: workers are spawned). ``done(i, result)`` is called as each job
    finishes, in the order they finish. A job whose worker dies runs again on a fresh worker
    up to ``retries`` times, then ``failed(i, message)`` says so; a job whose ``fn`` raised
    is not run again: ``failed(i, "TypeError: ...")``. Any exception (Ctrl-C included) kills
    the workers at once and propagates."""
    ctx = multiprocessing.get_context("spawn")
    pending = deque(range(len(jobs)))
    deaths = [0] * len(jobs)
    pool: list[_Worker] = []
    finished = False

    def died(i: int, code: int | None) -> None:
        """Job ``i`` lost its worker: it runs again, or past ``retries`` it is reported."""
        deaths[i] += 1
        if deaths[i] > retries:
            times = "once" if deaths[i] == 1 else f"{deaths[i]} times"
            failed(i, f"its worker process died ({_exit_text(code)}) {times}")
        else:
            pending.appendleft(i)

    try:
        while pending or any(w.job is not None for w in pool):
            for w in list(pool):
                if w.job is None and pending:
                    i = pending.popleft()
                    if not w.give(i, jobs[i]):  # died idle: not the job's fault
                        pending.appendleft(i)
                        pool.remove(w)
                        w.stop(now=True)
            while pending and len(pool) < workers:
                w = _Worker(ctx, fn)
                pool.append(w)
                i = pending.popleft()
                if not w.give(i, jobs[i]):
                    pool.remove(w)
                    w.stop(now=True)
                    code = w.process.exitcode
                    if code is None or code >= 0:  # it ended by itself: no worker can start
                        raise RuntimeError(f"a new worker process died at once ({_exit_text(code)})")
                    # Killed from outside before it took job i: that costs job i a try, as
                    # if the worker had died holding it (a retry bound, not an endless loop).
                    died(i, code)
            busy = [w for w in pool if w.job is not None]
            if not busy:  # every new worker was killed before its job: start more, or end
                continue
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
            for w in busy:
                if w.conn not in ready and w.process.sentinel not in ready:
                    continue
                i = w.job
                assert i is not None
                try:
                    _, ok, value = w.conn.recv()
                except (EOFError, OSError):  # died holding job i
                    pool.remove(w)
                    w.stop(now=True)
                    died(i, w.process.exitcode)
                    continue
                w.job = None
                if ok:
                    done(i, value)
                else:
                    failed(i, value)
        finished = True
    finally:
        for w in pool:
            w.stop(now=not finished)
