"""Compiling a run's search kernels in a second process while the run loads its model: a first run on two cores.

On an empty numba cache, compiling the search kernels (``cube_kernel`` or ``stack_kernel`` with everything they
call, for the model's feature set) is most of a first ``pbmt translate``, and reading a new model (its table
parser's kernels, the parse, the binary cache) most of the rest; one waited for the other. ``start`` forks a child
that loads the model's stand-in (``pbmt.model.cache.standing_in``: the same features, settings and weights, its
arrays of the real types, but no data: nothing is read, parsed or cached) and translates one word with it, n-best
lines included, as the run's translator would: numba compiles the kernels the run's sentences need and saves them
(saves are locked, ``pbmt.base.numba_cache``). Meanwhile the run reads its model. Once it has, it calls
``Precompile.join``: it compiles the search kernel's biggest callees itself (``pbmt.search.decoder.kernel_parts``),
in the reverse of the order in which the child's compile of the search kernel reaches them, skipping any the child
is compiling, while the child goes on: each process compiles a specialisation the other has not (numba's compiles
are locked per specialisation across processes, ``pbmt.base.numba_cache``), waits for one the other is compiling and
loads what the other saved, so the two meet in the middle. The run then compiles the kernel that reads the
best derivations out of a search graph (``pbmt.search.decoder.path_kernel``), which the child reaches only after
the search kernel, the last on its path. The child lays out its word's options with the layout kernel's Python
(its translator's ``compiled_layout``): the run compiles the layout kernel with its own options, off the child's
longer path. Then the run waits for the child, and numba loads the kernels from the cache instead of compiling
them a second time.

The child starts only where it can pay: the search kernel the settings choose has no specialisation in the cache
at all (``first_run``: a warm cache starts nothing, nor does one a 1-best run left, which lacks only an
``--n-best`` run's kernels: the child would reach the path kernel the run compiles, wait for it and go on to the
n-best kernels while the run waits for it, the same time and more CPU; the run says that it compiles), this
process may use at least two cores and ``--threads`` is not 1, the machine's load average is below those cores (on
a busy machine the two processes would only take turns, as the scheduler shares the CPU between sessions, not
processes, and the child's stand-in and the kernels loaded twice cost about a tenth more CPU), ``os.fork`` exists,
and no other thread runs yet (a lock it held would stay locked in the child). ``PBMT_PRECOMPILE=0`` never starts
it; ``PBMT_PRECOMPILE=1`` starts it whatever the load. Its output goes nowhere and it dies with the run. A child
that fails or is killed costs time only: the run compiles what it lacks. Modes whose sentences go through other
kernels (``--documents``, ``--constraint``, ``--prefix``) start none, nor does a run on another machine's cluster
(``--scheduler``: its workers compile in their own caches).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import sys
import threading
from typing import Callable

from pbmt.base.nbest import write_lines
from pbmt.base.numba_cache import compile_unless_elsewhere, has_cached
from pbmt.base.parallel import available_cores
from pbmt.features.translation import Translator
from pbmt.model import cache
from pbmt.model.model import SearchSettings
from pbmt.search.decoder import k_best_paths, kernel_parts, path_kernel, search_kernel
from pbmt.search.output import nbest_text

NOTE = "first run: compiling the search kernels for this model's features (numba's cache keeps them for the next runs)"
ENVIRONMENT = "PBMT_PRECOMPILE"  # "0": never start the child; "1": whatever the load
STAND_IN_LINE = "a"  # what the child translates: an unknown word, so every sentence's search path


class Precompile:
    """The child compiling a run's kernels (``start``), until ``wait`` or ``stop`` reaps it."""

    def __init__(self, pid: int):
        self.pid = pid
        self.status: int | None = None  # the child's wait status, once reaped

    def join(self, translator: Translator, note: Callable[[], None] | None = None) -> bool:
        """With the run's model loaded (``translator``), compile the search kernel's parts the child has not
        started, and the kernel that reads the search's best derivations (module docstring), then ``wait`` for
        the child (``note``: called first if it still runs)."""
        if self.running():
            if note is not None:
                note()
                note = None
            words, markup = translator.read(STAND_IN_LINE)
            options = translator.options(words, markup)
            n_best = max(1, translator.n_best)
            for kernel, args in [*kernel_parts(translator.model, options, arcs=n_best > 1),
                                 path_kernel(options, n_best, translator.distinct)]:
                compile_unless_elsewhere(kernel, args)
        return self.wait(note)

    def wait(self, note: Callable[[], None] | None = None) -> bool:
        """Wait for the child to end (calling ``note()`` first if it has not ended yet); whether it compiled
        everything (exit status 0)."""
        if self.running() and note is not None:
            note()
        if self.pid >= 0:
            self.status = os.waitpid(self.pid, 0)[1]
            self.pid = -1
        return self.status is not None and os.waitstatus_to_exitcode(self.status) == 0

    def running(self) -> bool:
        """Whether the child still runs (if it has ended, it is reaped)."""
        if self.pid < 0:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.pid, self.status = -1, status
        return not pid

    def stop(self) -> None:
        """End the child, if it still runs (the run failed before its first sentence)."""
        if self.pid >= 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self.wait()


def start(args: argparse.Namespace, settings: SearchSettings,
          make_translator: Callable[..., Translator]) -> Precompile | None:
    """Fork the child that compiles the kernels of a ``pbmt translate`` run of ``args`` (its translator:
    ``make_translator(args, compiled_layout=...)``, under the search ``settings``), or None where it would not
    pay (module docstring)."""
    if not worth_it(args, settings):
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return Precompile(pid)
    _child(args, make_translator)  # never returns


def worth_it(args: argparse.Namespace, settings: SearchSettings) -> bool:
    """Whether a child compiling the run's kernels can shorten the run (module docstring)."""
    wanted = os.environ.get(ENVIRONMENT, "")
    cores = available_cores()
    if wanted == "0" or not hasattr(os, "fork") or cores < 2:
        return False
    if wanted != "1" and _load() >= cores:  # no core to spare: the two processes would take turns
        return False
    if threading.active_count() > 1:  # a lock another thread holds would stay locked in the child
        return False
    if getattr(args, "threads", 2) < 2 or args.documents is not None or args.constraint is not None \
            or args.prefix is not None or args.scheduler is not None:
        return False
    return first_run(settings)  # not for the n-best kernels alone (module docstring)


def first_run(settings: SearchSettings, n_best: int = 0, lattices: bool = False) -> bool:
    """Whether numba's cache lacks the search kernel ``settings`` choose or, for an n-best list of ``n_best``
    entries (0: none), the kernel writing its lines and (``n_best`` over 1) the one reading the n best
    derivations (a cache a 1-best run left has neither: one sentence's first 100-best then took 13.6 CPU s, 108
    s at load 11), or with ``lattices`` (lattice MERT) the kernels making search graphs' edges and their
    envelopes (a first optimisation compiled for 236 s at load 15 after a warm decode): the run compiles."""
    kernels = [search_kernel(settings)] + [write_lines] * (n_best > 0) + [k_best_paths] * (n_best > 1)
    if lattices:  # imported here: a plain translate loads no lattice code
        from pbmt.search.lattice import envelopes, live_edges

        kernels += [live_edges, envelopes]
    return not all(map(has_cached, kernels))


def say_first_run(settings: SearchSettings, verb: str, quiet: bool = False, n_best: int = 0,
                  lattices: bool = False) -> bool:
    """Whether the search kernels ``settings`` choose (and an ``n_best`` list's, or lattice MERT's) compile in
    this run (``first_run``); if so, and not ``quiet``, ``say`` it before the wait."""
    if not first_run(settings, n_best, lattices):
        return False
    if not quiet:
        say(verb)
    return True


def say(verb: str) -> None:
    """Say on standard error that ``pbmt VERB`` compiles its kernels (``NOTE``)."""
    print(f"pbmt {verb}: {NOTE}", file=sys.stderr, flush=True)


def _load() -> float:
    """The machine's load average over the last minute (0 where the system does not say)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return 0.0


def _child(args: argparse.Namespace, make_translator: Callable[..., Translator]) -> None:
    code = 1
    try:
        _die_with_parent()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        # the stand-in's one word is laid out by the layout kernel's Python (milliseconds): the run compiles it
        # itself (``join``), which takes it off this process's longer path
        with cache.standing_in():
            nbest_text(make_translator(args, compiled_layout=False).translate(0, STAND_IN_LINE).nbest)
        code = 0
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    """Have the kernel kill this process when its parent dies (Linux's ``PR_SET_PDEATHSIG``; elsewhere the
    child ends when its compiling does)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
