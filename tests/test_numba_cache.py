"""Processes compiling different specialisations of one cached function at once leave numba's cache whole
(``pbmt.base.numba_cache``): every specialisation has its entry, and each entry's file holds that signature's code.

The racing processes hold numba's index a fifth of a second after reading it, so that without the lock their
saves interleave in nearly every run (numba's own save, three runs: 8 or 9 of 20 entries lost and 1 or 2 naming
another signature's file each time). Unslowed, three processes compiling 48 specialisations between them lost
entries in 2 of 4 runs and named a wrong file in 2 of 4 with numba's own save, and did neither in 4 runs with the
lock.
"""

from __future__ import annotations

import subprocess
import sys
import time

RACER = """
import sys, time
import numpy as np
import pbmt.base.numba_cache
from numba.core import caching

read = caching.IndexDataCacheFile._load_index
def slow_read(self):
    index = read(self)
    time.sleep(0.2)
    return index
caching.IndexDataCacheFile._load_index = slow_read

sys.path.insert(0, sys.argv[1])
import identity
k, n = int(sys.argv[2]), int(sys.argv[3])
values = [d(1) for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.float32, np.float64,
                         np.complex64, np.complex128)]
values += [np.ones(2, type(v)) for v in values]
open(sys.argv[1] + f"/ready{k}", "w").close()
while not __import__("os").path.exists(sys.argv[1] + "/go"):
    time.sleep(0.01)
for v in values[k::n]:
    identity.f(v)
"""

CHECK = """
import sys
import numpy as np
import pbmt.base.numba_cache
from numba.core.registry import cpu_target
sys.path.insert(0, sys.argv[1])
import identity
identity.g(1)  # numba's runtime set up, so that a cached specialisation can be rebuilt
cache = identity.f._cache
index = cache._cache_file._load_index()
wrong = [key[0] for key, name in index.items()
         if tuple(cache._impl.rebuild(cpu_target.target_context, cache._cache_file._load_data(name)).signature.args)
         != tuple(key[0])]
print(len(index), len(wrong))
"""

MODULE = "from numba import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x\n\n\n@njit\ndef g(x):\n    return x\n"


def test_racing_processes_leave_every_specialisation_with_its_own_code(tmp_path):
    (tmp_path / "identity.py").write_text(MODULE)
    racers = 3
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path), str(k), str(racers)])
             for k in range(racers)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready*"))) < racers and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), "a racing process ended before the race"
        time.sleep(0.02)
    (tmp_path / "go").touch()
    assert [p.wait(timeout=300) for p in procs] == [0] * racers
    out = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path)], capture_output=True, text=True, check=True)
    entries, wrong = map(int, out.stdout.split())
    assert (entries, wrong) == (20, 0)


HOLDER = """
import sys, time
import numba
import pbmt.base.numba_cache as numba_cache
sys.path.insert(0, sys.argv[1])
import identity
with numba_cache._compiling(identity.f, (numba.int64,)):
    open(sys.argv[1] + "/held", "w").close()
    while not __import__("os").path.exists(sys.argv[1] + "/asked"):
        time.sleep(0.01)
    time.sleep(0.5)  # the other process calls f meanwhile
    identity.f(1)
"""

WAITER = """
import sys
import numba
from numba.core import event
import pbmt.base.numba_cache as numba_cache
sys.path.insert(0, sys.argv[1])
import identity
compiled = []
event.register("numba:compile", type(
    "L", (event.Listener,), {"on_start": lambda self, ev: None,
                             "on_end": lambda self, ev: compiled.append(ev.data["dispatcher"])})())
here = numba_cache.compile_unless_elsewhere(identity.f, (numba.int64,))
open(sys.argv[1] + "/asked", "w").close()
print(here, identity.f(1), len(compiled))
"""


def test_a_specialisation_another_process_compiles_is_waited_for_and_loaded(tmp_path):
    (tmp_path / "identity.py").write_text(MODULE)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)])
    deadline = time.monotonic() + 120
    while not (tmp_path / "held").exists() and time.monotonic() < deadline:
        assert holder.poll() is None, "the holding process ended before holding the lock"
        time.sleep(0.02)
    out = subprocess.run([sys.executable, "-c", WAITER, str(tmp_path)], capture_output=True, text=True, check=True)
    assert holder.wait(timeout=120) == 0
    # skipped while the holder compiles it; then the call waits for its save and loads it: no compile of its own
    assert out.stdout.split() == ["False", "1", "0"]


FIRST_RUN = """
import sys
import pbmt.base.numba_cache
sys.path.insert(0, sys.argv[1])
import gone, identity
print(identity.f(gone.Pair(1, 2)).b, identity.f(3))
"""

NEXT_RUN = """
import sys
if sys.argv[2] == "pbmt":
    import pbmt.base.numba_cache
sys.path.insert(0, sys.argv[1])
import identity
print(identity.f(4))
"""


def test_an_index_naming_a_module_gone_is_a_cache_miss_and_written_anew(tmp_path):
    """A cached kernel once called with a named tuple of a module that is gone (a feature module's sentence data
    in a search kernel's index): numba's reading of the index fails every later call; pbmt's compiles, answers
    and writes an index that reads back."""
    (tmp_path / "identity.py").write_text(MODULE)
    (tmp_path / "gone.py").write_text("from collections import namedtuple\n\nPair = namedtuple('Pair', 'a b')\n")
    first = subprocess.run([sys.executable, "-c", FIRST_RUN, str(tmp_path)], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["2", "3"]
    (tmp_path / "gone.py").unlink()
    numbas = subprocess.run([sys.executable, "-c", NEXT_RUN, str(tmp_path), "numba"], capture_output=True, text=True)
    assert numbas.returncode != 0 and "No module named 'gone'" in numbas.stderr
    for _ in range(2):  # the second run reads the index the first wrote
        run = subprocess.run([sys.executable, "-c", NEXT_RUN, str(tmp_path), "pbmt"], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["4"]
    index = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path)], capture_output=True, text=True, check=True)
    assert index.stdout.split() == ["1", "0"]
