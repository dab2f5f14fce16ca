"""Mapping work over sentences here (on one thread or several), on local worker processes, or on a dask cluster.

``ParallelMap(work, state, workers, scheduler, threads)`` applies ``work(state, item)``
to items and gives the results in the items' order. On threads, every thread
works on ``state`` itself (one model in memory): ``work`` must then leave it
unchanged, or change it under a lock of its own, and the kernels it runs
release the GIL. To processes, ``state`` (a translator
holding a model, say) is pickled once here and travels with every shard, so
that any worker, a restarted one too, can run any shard; each worker process
unpickles it at its first shard and keeps it. ``work`` must be picklable (a
module-level function, or ``functools.partial`` of one) and so must
``state``, cheaply: a ``TranslationModel`` pickles as its ``moses.ini`` path
and settings (``pbmt.model.model``: a few hundred bytes), and an object
holding more than it can rebuild pickles as what builds it (``__reduce__``),
never as arrays.

- One worker and no scheduler: everything runs in this process, on ``state``
  itself: on a pool of ``threads`` threads, or here alone when there is one
  thread or fewer than two items (a pool would cost more than it buys).
- ``workers`` > 1: a dask ``LocalCluster`` of that many single-threaded
  processes, started here and stopped by ``close()``; but when the caller
  says how many items it will map (``size``) and they are fewer than
  ``cluster_min_items()`` a worker, here on ``threads`` threads instead: each
  worker process costs seconds to start and to load its own model, more than
  a short input's decoding on threads over the one model already loaded.
  Work of a few large items (training's shards) gives no ``size`` and keeps
  its workers.
- ``scheduler`` ("tcp://host:port"): the workers of an existing
  dask.distributed cluster (``workers`` is then ignored).

Items travel in shards of ``chunksize``; a shard whose worker dies is run again
on another worker (and one that raises is retried ``retries`` times), and
since every result is taken once from its shard's future, none is lost or
duplicated. Work must therefore be a pure function of (state, item): then the
output is the serial output whatever the number of workers.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import os
import pickle
import signal
import threading
import warnings
from collections import deque
from collections.abc import Sized
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator

import cloudpickle

from pbmt.base.errors import PbmtError


def available_cores() -> int:
    """The processors this process may run on (its CPU affinity, as a container or ``taskset`` limits it):
    the default number of decoding threads."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this system (macOS)
        return os.cpu_count() or 1


CLUSTER_MIN_ITEMS = 250  # items a local worker process must have before a cluster is started (docs/scale-out.md)


def cluster_min_items() -> int:
    """Items each local worker process must have before ``ParallelMap`` starts a cluster: $PBMT_CLUSTER_MIN_ITEMS
    (0: always start it), else ``CLUSTER_MIN_ITEMS``."""
    text = os.environ.get("PBMT_CLUSTER_MIN_ITEMS", "").strip()
    if not text:
        return CLUSTER_MIN_ITEMS
    if not text.isascii() or not text.isdigit():
        raise PbmtError(f"PBMT_CLUSTER_MIN_ITEMS must be a whole number of items (0 or more), not {text!r}")
    return int(text)


# worker side: state key -> (state, lock); lives as long as the worker process
_states: dict[str, tuple[Any, threading.Lock]] = {}
_states_lock = threading.Lock()


def _run_shard(key: str, work: Callable[[Any, Any], Any], state: bytes, shard: list) -> list:
    with _states_lock:
        if key not in _states:
            _states[key] = (pickle.loads(state), threading.Lock())
        found, lock = _states[key]
    with lock:  # a worker with several threads shares one state, which work may update (a translator re-pruned)
        return [work(found, item) for item in shard]


def _run_items(work: Callable[[Any, Any], Any], state: Any, items: list,
               stop: threading.Event) -> tuple[list, BaseException | None]:
    """``work(state, item)`` of each item in turn, on a thread of the pool, until ``stop`` is set (the caller
    stopped: Ctrl-C waits for one item, not a run): the results up to the first item that raises, and its
    error (None if none did), so that the caller gives the results before it first."""
    results = []
    try:
        for item in items:
            if stop.is_set():
                break
            results.append(work(state, item))
    except BaseException as error:  # raised again by the caller, after the results before it
        return results, error
    return results, None


def _forget(key: str) -> None:
    with _states_lock:
        _states.pop(key, None)


def _worker_environment() -> dict:
    """dask's environment for new worker processes, without its MALLOC_TRIM_THRESHOLD_.

    dask sets glibc's trim threshold to 64 KiB so that workers hand freed memory
    back to the system; the decoder allocates and frees many small arrays per
    sentence, and under that setting it runs at about two thirds of its speed
    (docs/scale-out.md).
    """
    import dask

    environment = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    environment.pop("MALLOC_TRIM_THRESHOLD_", None)
    return environment


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while local workers are started, so they inherit it: Ctrl-C reaches every process of the
    terminal's group, and only this one should act on it (stop the cluster, report "interrupted"), not each
    worker with its own traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class ParallelMap:
    """``work(state, item)`` over items, in order: here (on ``threads`` threads), on ``workers`` local
    processes, or on ``scheduler``.

    connect_timeout: seconds to wait for ``scheduler`` before a PbmtError
    naming it; retries: reruns of a shard whose work raised; size: how many
    items (sentences) ``map`` will get, when the caller knows (None: a
    cluster starts whatever the size). ``cluster_size``: the fewest items for
    which ``workers`` local processes start (``workers`` times
    ``cluster_min_items()``, read once here; None with one worker or a
    scheduler); ``note`` says why a short input's items stay here.
    """

    def __init__(self, work: Callable[[Any, Any], Any], state: Any = None, workers: int = 1,
                 scheduler: str | None = None, retries: int = 2, connect_timeout: float = 5.0, threads: int = 1,
                 size: int | None = None):
        if workers < 1 or threads < 1:
            raise ValueError(f"workers and threads must be at least 1, got {workers} and {threads}")
        self.work, self.state, self.retries, self.threads, self.size = work, state, retries, threads, size
        self._client = self._cluster = self._state = None
        self.cluster_size = workers * cluster_min_items() if scheduler is None and workers > 1 else None
        # (size, workers) of an input too short for the workers it asked for
        self._short = (size, workers) if self.cluster_size is not None and size is not None \
            and size < self.cluster_size else None
        if scheduler is None and (self.cluster_size is None or self._short is not None):
            return
        import dask
        from distributed import Client, LocalCluster

        # pickled once here; a worker unpickles it at its first shard and keeps it (a dead worker's shards take
        # it along to the next)
        self._state = cloudpickle.dumps(state)
        self._key = hashlib.sha256(cloudpickle.dumps(work) + self._state).hexdigest()
        if scheduler is None:
            # no memory limit: the memory-mapped model counts in each worker's resident size
            with (dask.config.set({"distributed.nanny.pre-spawn-environ": _worker_environment()}),
                  warnings.catch_warnings(), _sigint_ignored()):
                # the scheduler's (dashboard-less) HTTP server moves off a busy port 8787 by itself
                warnings.filterwarnings("ignore", message="Port 8787 is already in use")
                self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                             dashboard_address=None, memory_limit=0,
                                             silence_logs=logging.CRITICAL)
            self._client = Client(self._cluster)
        else:
            try:
                self._client = Client(scheduler, timeout=connect_timeout)
            except (OSError, TimeoutError, ValueError) as err:
                raise PbmtError(f"cannot reach the dask scheduler at {scheduler} within {connect_timeout:g} s "
                                f"({type(err).__name__}: {err})") from None

    @property
    def distributed(self) -> bool:
        """Whether the items go to worker processes (a cluster), not to threads here."""
        return self._client is not None

    def note(self, done: str) -> str | None:
        """The line a command prints when its ``workers`` stay unstarted because the input is short (``size``), as
        'note: 150 sentences are {done} here on 2 threads: ...'; None when they were started (or not asked for)."""
        if self._short is None:
            return None
        size, workers = self._short
        return (f"note: {size} sentences are {done} here on {self.threads} thread{'s' if self.threads > 1 else ''}: "
                f"--workers {workers} starts worker processes for {self.cluster_size} or more (each loads the model "
                "first)")

    def map(self, items: Iterable[Any], chunksize: int = 8,
            progress: Callable[[int], Any] | None = None) -> Iterator[Any]:
        """Results of ``work`` on each item, in the items' order.

        chunksize: items per shard sent to a worker, and the most a thread takes at once (``_threaded``);
        progress: called with the number of items just finished, as shards finish in any order.
        """
        if self._client is not None:
            return self._distributed(items, chunksize, progress)
        size = len(items) if isinstance(items, Sized) else self.size
        items = iter(items)
        head = list(itertools.islice(items, 2))
        if self.threads == 1 or len(head) < 2:
            return self._serial(itertools.chain(head, items), progress)
        return self._threaded(itertools.chain(head, items), size, chunksize, progress)

    def _serial(self, items, progress):
        for item in items:
            result = self.work(self.state, item)
            if progress is not None:
                progress(1)
            yield result

    def _threaded(self, items, size: int | None, chunksize: int, progress):
        """Items on a pool of threads, in runs of consecutive items (a task each), at most a few runs per thread
        ahead of the one to give next, so that results stream out in order as they do serially and a long input
        is never all queued at once. A run saves this thread a future and a wake-up per item, time it holds
        Python's lock while the decoding threads wait for it; runs are at most ``chunksize`` items and at most
        the items left (of ``size``: the items' length, else the size the map was made for) over the runs in
        flight, so they shrink to one item as the input ends and no thread idles while another finishes a long
        run (sentences differ in length); without a size, one item a run."""
        ahead = 4 * self.threads
        left = size
        pending: deque = deque()
        stop = threading.Event()
        with ThreadPoolExecutor(self.threads, thread_name_prefix="pbmt") as pool:
            try:
                while run := list(itertools.islice(items, 1 if left is None else max(1, min(chunksize,
                                                                                          left // ahead)))):
                    if left is not None:
                        left -= len(run)
                    pending.append(pool.submit(_run_items, self.work, self.state, run, stop))
                    if len(pending) >= ahead:
                        yield from self._next(pending, progress)
                while pending:
                    yield from self._next(pending, progress)
            finally:  # the caller stopped early, or work raised: drop what has not started, end runs started
                stop.set()
                for future in pending:
                    future.cancel()

    @staticmethod
    def _next(pending: deque, progress) -> Iterator[Any]:
        """The results of the oldest run; then the error of the item that raised in it, if one did."""
        results, error = pending.popleft().result()
        if progress is not None and results:
            progress(len(results))
        yield from results
        if error is not None:
            raise error

    def _distributed(self, items, chunksize, progress):
        from distributed import as_completed

        items = iter(items)
        futures = []
        while shard := list(itertools.islice(items, chunksize)):
            futures.append(self._client.submit(_run_shard, self._key, self.work, self._state, shard,
                                               pure=False, retries=self.retries))
        index = {future.key: i for i, future in enumerate(futures)}
        done: dict[int, list] = {}
        next_shard = 0
        try:
            for future in as_completed(futures):
                shard_results = future.result()
                done[index[future.key]] = shard_results
                if progress is not None:
                    progress(len(shard_results))
                while next_shard in done:
                    yield from done.pop(next_shard)
                    next_shard += 1
        finally:
            self._client.cancel(futures)  # the rest, when the caller stops early or a shard failed

    def close(self) -> None:
        """Drop the workers' state (an existing cluster) or stop the local cluster."""
        if self._client is None:
            return
        if self._cluster is None:
            self._client.run(_forget, self._key)
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = self._state = None

    def __enter__(self) -> "ParallelMap":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
