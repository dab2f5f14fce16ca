"""pbmt.parallel: serial, local dask cluster and existing cluster give the serial results, in order."""

import logging
import os
import sys
import time
from functools import partial
from pathlib import Path

import cloudpickle
import pytest

from pbmt.cli import main
from pbmt.errors import PbmtError
from pbmt.model.model import TranslationModel
from pbmt.parallel import ParallelMap
from pbmt.tune.loop import DevDecoder

distributed = pytest.importorskip("distributed")

# the workers cannot import this test module: ship its functions by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SOURCES = ["a b c", "c a e b", "b x a d", "", "e d c b a", "d e", "a c e", "b b c d", "e a"]


@pytest.fixture(scope="module")
def scheduler():
    """The address of a two-process local dask cluster shared by this module's tests."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=0, silence_logs=logging.CRITICAL) as cluster:
        yield cluster.scheduler_address


def _offset(log: Path) -> int:
    with open(log, "a") as handle:
        handle.write(f"{os.getpid()}\n")
    return 1000


def _add(offset: int, item: int) -> int:
    return offset + item * item


def _die_once(marker: Path, offset: int, item: int) -> int:
    if item == 7 and not marker.exists():
        marker.write_text("died")
        os._exit(1)
    return offset + item


def test_generic_map_is_serial_and_ordered_with_progress(scheduler, tmp_path):
    serial = list(ParallelMap(partial(_offset, tmp_path / "serial"), _add).map(range(50)))
    finished = []
    with ParallelMap(partial(_offset, tmp_path / "log"), _add, scheduler=scheduler) as cluster:
        assert list(cluster.map(range(50), chunksize=3, progress=finished.append)) == serial
    assert serial == [1000 + i * i for i in range(50)]
    assert sum(finished) == 50 and max(finished) == 3


def test_worker_state_is_built_once_per_worker(scheduler, tmp_path):
    log = tmp_path / "setups"
    with ParallelMap(partial(_offset, log), _add, scheduler=scheduler) as cluster:
        for _ in range(3):
            assert list(cluster.map(range(40), chunksize=1)) == [1000 + i * i for i in range(40)]
    pids = log.read_text().split()
    assert 1 <= len(pids) <= 2 and len(set(pids)) == len(pids)


def test_a_dead_workers_shard_runs_again_elsewhere(scheduler, tmp_path):
    marker = tmp_path / "marker"
    with ParallelMap(partial(_offset, tmp_path / "log"), partial(_die_once, marker), scheduler=scheduler) as cluster:
        assert list(cluster.map(range(30), chunksize=2)) == [1000 + i for i in range(30)]
    assert marker.exists()


def test_an_unreachable_scheduler_is_named_quickly():
    started = time.perf_counter()
    with pytest.raises(PbmtError, match="tcp://127.0.0.1:9"):
        ParallelMap(partial(_offset, Path("/nonexistent")), _add, scheduler="tcp://127.0.0.1:9", connect_timeout=2)
    assert time.perf_counter() - started < 10


def test_translate_on_a_local_and_an_existing_cluster_gives_the_serial_files(tiny_model_dir, scheduler, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(SOURCES * 3) + "\n")
    runs = {"serial": [], "local": ["--workers", "2"], "cluster": ["--scheduler", scheduler]}
    for name, extra in runs.items():
        assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                     "-o", str(tmp_path / f"{name}.out"), "--n-best", str(tmp_path / f"{name}.nbest"), "7",
                     *extra]) == 0
    for suffix in ("out", "nbest"):
        serial = (tmp_path / f"serial.{suffix}").read_text()
        assert serial and all((tmp_path / f"{name}.{suffix}").read_text() == serial for name in runs)


def test_dev_decoder_on_a_cluster_gives_the_serial_nbest_lists(tiny_model_dir, scheduler):
    ini = tiny_model_dir / "moses.ini"
    model = TranslationModel.load(ini)
    sources = [s for s in SOURCES if s]
    changed = model.weights.copy()
    changed[0] += 0.5
    with DevDecoder(ini, sources, 10, model=model) as serial, DevDecoder(ini, sources, 10, scheduler=scheduler) as cluster:
        for weights in (model.weights, changed, model.weights):
            expected = serial(weights)
            assert [[e.to_line() for e in n] for n in cluster(weights)] == [[e.to_line() for e in n] for n in expected]


def test_a_bad_scheduler_address_is_a_command_line_error(tiny_model_dir, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a b\n")
    code = main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "--scheduler",
                 "tcp://127.0.0.1:9"])
    assert code == 1 and "tcp://127.0.0.1:9" in capsys.readouterr().err
