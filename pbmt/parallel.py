"""Mapping work over sentences in this process or on local worker processes.

``LocalMap(setup, work, workers)`` applies ``work(state, item)`` to items in
order. Each worker process builds its own ``state`` once with ``setup()`` (a
loaded model, say), so only items and results cross process boundaries;
``setup`` and ``work`` must be picklable (module-level functions, or
``functools.partial`` of them). With one worker everything runs here, on
``state`` if given (so a model loaded to check it is not loaded twice).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any, Callable, Iterable, Iterator

_state: Any = None


def _start(setup: Callable[[], Any]) -> None:
    global _state
    _state = setup()


def _call(work: Callable[[Any, Any], Any], item: Any) -> Any:
    return work(_state, item)


class LocalMap:
    """``work(state, item)`` over items, in order, on ``workers`` local processes (1: this one)."""

    def __init__(self, setup: Callable[[], Any], work: Callable[[Any, Any], Any], workers: int = 1,
                 state: Any = None):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.work = work
        self._executor = None
        if workers == 1:
            self._state = setup() if state is None else state
        else:
            self._executor = ProcessPoolExecutor(workers, initializer=_start, initargs=(setup,))

    def map(self, items: Iterable[Any], chunksize: int = 4) -> Iterator[Any]:
        """Results of ``work`` on each item, in the items' order, as they come."""
        if self._executor is None:
            return (self.work(self._state, item) for item in items)
        return self._executor.map(partial(_call, self.work), items, chunksize=chunksize)

    def close(self) -> None:
        """Stop the worker processes (if any)."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def __enter__(self) -> "LocalMap":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
