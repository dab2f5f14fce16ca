"""pbmt.base.parallel: serial, local dask cluster and existing cluster give the serial results, in order."""

import dataclasses
import json
import logging
import os
import subprocess
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

from pbmt.commands.cli import build_parser, main
from pbmt.commands.translate import _make_translator, _translate
from pbmt.base.errors import PbmtError
from pbmt.model.block_features import BlockWeights
from pbmt.model.model import TranslationModel
from pbmt.model.sparse import SparseModel
from pbmt.base import parallel
from pbmt.base.parallel import CLUSTER_MIN_ITEMS, ParallelMap
from pbmt.features.translation import Translator
from pbmt.tune.loop import DevDecoder

distributed = pytest.importorskip("distributed")

# the workers cannot import this test module: ship its functions by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SOURCES = ["a b c", "c a e b", "b x a d", "", "e d c b a", "d e", "a c e", "b b c d", "e a"]


@pytest.fixture(scope="module")
def scheduler():
    """The address of a two-process local dask cluster shared by this module's tests."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Port 8787 is already in use")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                           memory_limit=0, silence_logs=logging.CRITICAL)
    with cluster:
        yield cluster.scheduler_address


@pytest.fixture
def command_line_cluster(tmp_path):
    """The address of a scheduler and two worker processes started with dask's own commands, as on a cluster."""
    address_file = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": tmp_path}
    processes = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                   "--scheduler-file", str(address_file)], **quiet)]
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                address = json.loads(address_file.read_text())["address"]
                break
            except (OSError, ValueError, KeyError):
                assert time.monotonic() < deadline and processes[0].poll() is None, "dask scheduler did not start"
                time.sleep(0.2)
        processes.append(subprocess.Popen([*dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                           "--memory-limit", "0", "--no-dashboard"], **quiet))
        with distributed.Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)


class _Offset:
    """A worker state that logs its process id wherever it is built or unpickled."""

    def __init__(self, log: Path):
        self.log, self.offset = log, 1000
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()}\n")

    def __reduce__(self):
        return _Offset, (self.log,)


def _add(state: _Offset, item: int) -> int:
    return state.offset + item * item


def _die_once(marker: Path, state: _Offset, item: int) -> int:
    if item == 7 and not marker.exists():
        marker.write_text("died")
        os._exit(1)
    return state.offset + item


def test_generic_map_is_serial_and_ordered_with_progress(scheduler, tmp_path):
    serial = list(ParallelMap(_add, _Offset(tmp_path / "serial")).map(range(50)))
    finished = []
    with ParallelMap(_add, _Offset(tmp_path / "log"), scheduler=scheduler) as cluster:
        assert list(cluster.map(range(50), chunksize=3, progress=finished.append)) == serial
    assert serial == [1000 + i * i for i in range(50)]
    assert sum(finished) == 50 and max(finished) == 3


def test_a_short_input_stays_here_on_threads_and_a_long_one_goes_to_workers(tmp_path, monkeypatch):
    monkeypatch.delenv("PBMT_CLUSTER_MIN_ITEMS")
    log = tmp_path / "setups"
    expected = [1000 + i * i for i in range(50)]
    with ParallelMap(_add, _Offset(log), workers=2, threads=2, size=2 * CLUSTER_MIN_ITEMS - 1) as here:
        assert not here.distributed and list(here.map(range(50))) == expected
    assert log.read_text().split() == [str(os.getpid())]  # no worker process unpickled the state
    monkeypatch.setenv("PBMT_CLUSTER_MIN_ITEMS", "25")
    with ParallelMap(_add, _Offset(log), workers=2, size=50) as cluster:
        assert cluster.distributed and list(cluster.map(range(50))) == expected
        assert cluster.cluster_size == 50
    monkeypatch.setenv("PBMT_CLUSTER_MIN_ITEMS", "1_000")
    with pytest.raises(PbmtError, match="PBMT_CLUSTER_MIN_ITEMS must be a whole number"):
        ParallelMap(_add, 0, workers=2, size=10)


def test_translate_with_workers_on_a_short_input_says_it_decodes_here(tiny_model_dir, tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.delenv("PBMT_CLUSTER_MIN_ITEMS")
    # the note states the size the map itself compared with, read once (here not the default's)
    monkeypatch.setattr(parallel, "cluster_min_items", lambda: CLUSTER_MIN_ITEMS + 50)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(SOURCES) + "\n")
    for name, extra in {"one": ["--threads", "1"], "workers": ["--threads", "2", "--workers", "2"]}.items():
        assert main(["translate", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                     "-o", str(tmp_path / f"{name}.out"), *extra]) == 0
    assert (tmp_path / "workers.out").read_text() == (tmp_path / "one.out").read_text()
    assert (f"note: {len(SOURCES)} sentences are translated here on 2 threads: --workers 2 starts worker "
            f"processes for {2 * CLUSTER_MIN_ITEMS + 100} or more") in capsys.readouterr().err


def test_the_state_arrives_once_per_worker(scheduler, tmp_path):
    log = tmp_path / "setups"
    with ParallelMap(_add, _Offset(log), scheduler=scheduler) as cluster:
        for _ in range(3):
            assert list(cluster.map(range(40), chunksize=1)) == [1000 + i * i for i in range(40)]
    pids = log.read_text().split()
    assert pids[0] == str(os.getpid())  # built here, then unpickled at most once in each of the two workers
    assert 1 <= len(pids) - 1 <= 2 and len(set(pids[1:])) == len(pids) - 1 and str(os.getpid()) not in pids[1:]


def test_a_dead_workers_shard_runs_again_elsewhere(scheduler, tmp_path):
    marker = tmp_path / "marker"
    with ParallelMap(partial(_die_once, marker), _Offset(tmp_path / "log"), scheduler=scheduler) as cluster:
        assert list(cluster.map(range(30), chunksize=2)) == [1000 + i for i in range(30)]
    assert marker.exists()


def _translate_or_die_once(marker: Path, translator, item: tuple[int, str]):
    if item[0] == 11 and not marker.exists():
        marker.write_text("died")
        os._exit(1)
    return _translate(translator, item)


def test_a_worker_killed_during_a_decode_leaves_the_serial_output(tiny_model_dir, scheduler, tmp_path):
    translator = _make_translator(build_parser().parse_args(["translate", "-f", str(tiny_model_dir / "moses.ini"),
                                                             "--n-best", "-", "--n-best-size", "5"]))
    items = list(enumerate(SOURCES * 3))
    serial = [(t.text, [e.to_line() for e in t.nbest]) for t in ParallelMap(_translate, translator).map(items)]
    marker = tmp_path / "marker"
    with ParallelMap(partial(_translate_or_die_once, marker), translator, scheduler=scheduler) as cluster:
        assert [(t.text, [e.to_line() for e in t.nbest]) for t in cluster.map(items, chunksize=2)] == serial
    assert marker.exists() and serial[11][0]


def test_an_unreachable_scheduler_is_named_with_the_time_waited():
    with pytest.raises(PbmtError, match=r"scheduler at tcp://127\.0\.0\.1:9 within 2 s"):
        ParallelMap(_add, 0, scheduler="tcp://127.0.0.1:9", connect_timeout=2)


def test_translate_on_a_local_and_a_command_line_cluster_gives_the_serial_files(tiny_model_dir,
                                                                               command_line_cluster, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(SOURCES * 3) + "\n")
    runs = {"serial": [], "local": ["--workers", "2"], "cluster": ["--scheduler", command_line_cluster]}
    for name, extra in runs.items():
        assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                     "-o", str(tmp_path / f"{name}.out"), "--n-best", str(tmp_path / f"{name}.nbest"), "--n-best-size", "7",
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
    with DevDecoder(model, sources, 10) as serial, DevDecoder(model, sources, 10, scheduler=scheduler) as cluster:
        for weights in (model.weights, changed, model.weights):
            expected = serial(weights)
            assert [[e.to_line() for e in n] for n in cluster(weights)] == [[e.to_line() for e in n] for n in expected]


def test_a_bad_scheduler_address_is_a_command_line_error(tiny_model_dir, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a b\n")
    code = main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "--scheduler",
                 "tcp://127.0.0.1:9"])
    assert code == 1 and "tcp://127.0.0.1:9" in capsys.readouterr().err


UNSEEN = ["a zorro b", "zorro tigre a c", "tigre", "e 1999 zorro d", "b a"]


def test_unseen_words_translate_alike_in_a_worker_and_here_and_score_as_kenlm_unk(tiny_model_dir, repo_corpus,
                                                                                      tmp_path):
    """Words the model does not know get per-sentence ids (the same id means another word in another sentence):
    two workers give this process's n-best lists, the LM scores them as <unk> (as the kenlm module does), and
    the model's vocabulary does not grow."""
    kenlm = pytest.importorskip("kenlm")
    src = tmp_path / "in.txt"
    src.write_text("\n".join(UNSEEN * 2) + "\n")
    for name, extra in {"here": [], "workers": ["--workers", "2"]}.items():
        assert main(["translate", "-q", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                     "-o", str(tmp_path / f"{name}.out"), "--n-best", str(tmp_path / f"{name}.nbest"), "--n-best-size", "5",
                     *extra]) == 0
    here = (tmp_path / "here.nbest").read_text()
    assert here and (tmp_path / "workers.nbest").read_text() == here
    assert (tmp_path / "workers.out").read_text() == (tmp_path / "here.out").read_text()
    outputs = (tmp_path / "here.out").read_text().splitlines()
    assert all(word in line.split() for line, source in zip(outputs, UNSEEN * 2) for word in source.split()
               if word in ("zorro", "tigre", "1999"))
    reference = kenlm.Model(str(repo_corpus / "lm3.arpa.gz"))  # the tiny model's LM
    for line in here.splitlines():
        fields = line.split(" ||| ")
        lm = float(fields[2].split("LM0= ")[1].split()[0])
        assert lm == pytest.approx(reference.score(fields[1], bos=True, eos=True) * np.log(10), abs=1e-3)
    translator = _make_translator(build_parser().parse_args(["translate", "--tokenized", "-f",
                                                             str(tiny_model_dir / "moses.ini")]))
    size = len(translator.model.vocab)
    assert [translator.translate(i, line).text for i, line in enumerate(UNSEEN * 2)] == outputs
    assert len(translator.model.vocab) == size


def test_an_unseen_word_a_block_feature_names_fires_it_here_and_in_a_worker(tiny_model_dir, scheduler):
    """The block family's names join the model's vocabulary before a sentence's overlay is made, so an input
    word only the weights name gets their id: every derivation passes 'zorro' through as the block zorro|zorro
    (2.0) with the word pair zorro|zorro (3.0), 5.0 above the model without them, in this process and on a
    worker; the vocabulary does not grow as lines are translated."""
    base = TranslationModel.load(tiny_model_dir / "moses.ini")
    with_blocks = dataclasses.replace(base, sparse=SparseModel.of_blocks(
        BlockWeights(["blk:zorro|zorro", "w:zorro|zorro"], np.array([2.0, 3.0]))))
    lines = ["a zorro b", "zorro c a", "b b zorro e"]
    plain = [Translator(base, n_best=3, tokenized=True).translate(i, line) for i, line in enumerate(lines)]
    translator = Translator(with_blocks, n_best=3, tokenized=True)
    here = [translator.translate(i, line) for i, line in enumerate(lines)]
    size = len(with_blocks.vocab)
    assert [translator.translate(i, line).text for i, line in enumerate(UNSEEN)] and len(with_blocks.vocab) == size
    for a, b in zip(here, plain):
        assert a.text == b.text and a.nbest[0].total == pytest.approx(b.nbest[0].total + 5.0, abs=1e-9)
    with ParallelMap(_translate, translator, scheduler=scheduler) as cluster:
        remote = list(cluster.map(list(enumerate(lines)), chunksize=1))
    assert [[e.to_line() for e in t.nbest] for t in remote] == [[e.to_line() for e in t.nbest] for t in here]


@pytest.mark.parametrize("verb, options", [
    ("analyze", ["--refs", "{dev}/dev.ref", "--stack", "2", "--search", "stack", "-o", "{out}"]),
    ("sample", ["--steps-per-sentence", "20", "--refs", "{dev}/dev.ref", "--trace", "{out}.trace", "-o", "{out}"]),
    ("tune", ["--refs", "{dev}/dev.ref", "--out", "{out}", "--n-best-size", "5", "--iterations", "1"]),
    ("tune", ["--refs", "{dev}/dev.ref", "--out", "{out}", "--algorithm", "costmargin", "--passes", "2"]),
    ("tune", ["--refs", "{dev}/dev.ref", "--out", "{out}", "--algorithm", "samplerank", "--epochs", "1",
              "--chains", "2", "--samples-per-sentence", "10", "--burn-in-per-sentence", "2"]),
])
def test_a_short_dev_set_is_worked_on_here_on_threads_not_on_started_workers(verb, options, tiny_model_dir, tiny_dev,
                                                                             tmp_path, monkeypatch, capsys):
    """tune (its decodes, block training's and SampleRank's chains), analyze and sample on a dev set far under
    250 sentences a worker start no worker processes for ``--workers 2``, and say so."""
    monkeypatch.delenv("PBMT_CLUSTER_MIN_ITEMS")
    monkeypatch.setattr(distributed, "LocalCluster", None)  # starting one would be a TypeError
    source = ["--src" if verb == "tune" else "-i", str(tiny_dev / "dev.src")]
    filled = [o.format(dev=tiny_dev, out=tmp_path / "out") for o in options]
    assert main([verb, "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), *source, *filled,
                 "--workers", "2", "--threads", "2"]) == 0
    size = len((tiny_dev / "dev.src").read_text().splitlines())
    done = {"analyze": "analysed", "sample": "sampled"}.get(verb, "sampled" if "samplerank" in options else "decoded")
    assert (f"note: {size} sentences are {done} here on 2 threads: --workers 2 starts worker processes for "
            f"{2 * CLUSTER_MIN_ITEMS} or more") in capsys.readouterr().err
