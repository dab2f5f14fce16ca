"""Threads over one shared model: the serial output, byte for byte, in input order, and a model nobody writes."""

import hashlib
import threading
import time

import numpy as np
import pytest

from pbmt.commands.cli import build_parser, main
from pbmt.commands.translate import _fingerprint
from pbmt.model.model import TranslationModel
from pbmt.base import parallel
from pbmt.base.parallel import ParallelMap, available_cores
from pbmt.base.config import MosesConfig
from pbmt.base.run_state import CHECKPOINT, model_files
from pbmt.features.translation import Translator

SOURCES = ["a b c", "c a e b", "b x a d", "", "e d c b a", "d e", "a c e", "b b c d", "e a", "a"]


def _square(state, item):
    if item == state:
        raise ValueError(f"item {item}")
    return item * item


def test_threaded_map_keeps_the_order_and_counts_every_item():
    finished = []
    with ParallelMap(_square, -1, threads=4) as pool:
        assert list(pool.map(range(100), progress=finished.append)) == [i * i for i in range(100)]
    assert sum(finished) == 100


@pytest.mark.parametrize("size", [None, 100])
def test_an_error_on_a_thread_reaches_the_caller_after_the_results_before_it(size):
    results = []
    with pytest.raises(ValueError, match="item 37"):
        for result in ParallelMap(_square, 37, threads=3, size=size).map(range(100)):
            results.append(result)
    assert results == [i * i for i in range(37)]


def test_threads_take_runs_of_items_that_shrink_to_one_as_the_input_ends(monkeypatch):
    """A known size sends consecutive items to a thread together (fewer futures and wake-ups for the thread
    giving the results), at most chunksize, one at a time at the end so that no thread idles long."""
    runs = []

    def counted(work, state, items, stop):
        runs.append(len(items))
        return run_items(work, state, items, stop)

    run_items = parallel._run_items
    monkeypatch.setattr(parallel, "_run_items", counted)
    finished = []
    with ParallelMap(_square, -1, threads=2, size=100) as pool:
        assert list(pool.map(iter(range(100)), chunksize=8, progress=finished.append)) == [i * i for i in range(100)]
        assert sum(runs) == sum(finished) == 100 and max(runs) == 8 and runs[-8:] == [1] * 8
        runs.clear()
        assert list(pool.map(range(20))) == [i * i for i in range(20)]  # a list's own length counts
        assert runs == [2, 2, 2] + [1] * 14
    runs.clear()
    assert list(ParallelMap(_square, -1, threads=2).map(iter(range(10)))) == [i * i for i in range(10)]
    assert runs == [1] * 10  # no size: one item a run


def test_a_caller_that_stops_waits_for_the_items_running_not_for_their_runs():
    started, release = [], threading.Event()

    def held(state, item):
        started.append(item)
        if item >= 8:  # all but the first run wait until the caller has stopped
            release.wait(10)
        return item

    with ParallelMap(held, None, threads=2, size=400) as pool:
        results = pool.map(range(400))
        assert next(results) == 0
        for _ in range(1000):  # until each thread is inside an item (a loaded machine starts the second late)
            if {8, 16} <= set(started):
                break
            time.sleep(0.01)
        threading.Timer(1.0, release.set).start()
        results.close()  # as Ctrl-C in the caller's loop does: it returns once the threads are idle
    assert sorted(started) == [*range(9), 16]  # the first run, and the item each thread was in when told


def test_one_item_or_one_thread_runs_here():
    seen = []

    def record(state, item):
        seen.append(threading.current_thread())
        return item

    assert list(ParallelMap(record, None, threads=8).map([5])) == [5]
    assert list(ParallelMap(record, None, threads=1).map(range(3))) == [0, 1, 2]
    assert set(seen) == {threading.current_thread()}


def _outputs(folder, name):
    return [(folder / f"{name}.{suffix}").read_bytes() for suffix in ("out", "nbest", "align")]


def test_translate_on_one_thread_two_threads_and_two_workers_writes_the_same_bytes(tiny_model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(SOURCES * 3) + "\n")
    runs = {"one": ["--threads", "1"], "two": ["--threads", "2"], "workers": ["--threads", "1", "--workers", "2"]}
    for name, extra in runs.items():
        assert main(["translate", "-q", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                     "-o", str(tmp_path / f"{name}.out"), "--n-best", str(tmp_path / f"{name}.nbest"),
                     "--n-best-size", "7", "--alignment", str(tmp_path / f"{name}.align"), *extra]) == 0
    one = _outputs(tmp_path, "one")
    assert all(one) and _outputs(tmp_path, "two") == one and _outputs(tmp_path, "workers") == one


def test_threads_is_a_setting_of_the_machine_not_of_the_output(tiny_model_dir, tmp_path, capsys):
    """A run killed on two threads resumes on one: the journal's fingerprint leaves --threads out."""
    src = tmp_path / "in.txt"
    src.write_text("\n".join(SOURCES) + "\n")
    common = ["translate", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o",
              str(tmp_path / "out")]
    lines = SOURCES
    model = model_files(MosesConfig.read(tiny_model_dir / "moses.ini"))
    prints = {threads: _fingerprint(build_parser().parse_args([*common, "--threads", threads]), lines, ["out"],
                                    model) for threads in ("1", "2")}
    assert prints["1"] == prints["2"]
    with pytest.raises(SystemExit) as exit_:
        main([*common, "--threads", "0"])
    assert exit_.value.code == 2 and "--threads must be at least 1" in capsys.readouterr().err
    assert build_parser().parse_args(common).threads == available_cores() >= 1


def test_tuning_on_one_thread_and_two_threads_gives_the_same_run(tiny_model_dir, tiny_dev, tmp_path):
    for threads in ("1", "2"):
        assert main(["tune", "-q", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tiny_dev / "dev.src"),
                     "--refs", str(tiny_dev / "dev.ref"), "--out", str(tmp_path / threads), "--n-best-size", "10",
                     "--restarts", "2", "--iterations", "2", "--threads", threads]) == 0
    with np.load(tmp_path / "1" / CHECKPOINT) as one, np.load(tmp_path / "2" / CHECKPOINT) as two:
        assert one["weights"].tobytes() == two["weights"].tobytes()
    logs = [[row.split("\t")[:5] for row in (tmp_path / t / "log.tsv").read_text().splitlines()] for t in "12"]
    assert logs[0] == logs[1]  # weights, dev BLEU and pool sizes; the seconds differ


def _tune(tiny_model_dir, tiny_dev, out, threads: str, *options: str) -> None:
    assert main(["tune", "-q", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tiny_dev / "dev.src"),
                 "--refs", str(tiny_dev / "dev.ref"), "--tokenized", "--out", str(out), "--threads", threads,
                 *options]) == 0


def _same_runs(folder) -> None:
    """The runs in ``folder``/1 and ``folder``/2 saved the same weights and logged the same rows but the seconds."""
    with np.load(folder / "1" / CHECKPOINT) as one, np.load(folder / "2" / CHECKPOINT) as two:
        assert one["weights"].tobytes() == two["weights"].tobytes()
    logs = []
    for run in "12":
        header, *rows = [row.split("\t") for row in (folder / run / "log.tsv").read_text().splitlines()]
        timeless = [i for i, name in enumerate(header) if not name.endswith(("seconds", "_s"))]
        logs.append([[row[i] for i in timeless] for row in rows])
    assert len(logs[0]) > 1 and logs[0] == logs[1]


def test_lattice_mert_on_one_thread_and_two_threads_gives_the_same_run(tiny_model_dir, tiny_dev, tmp_path):
    """Two threads decode the search graphs and run each line search's blocks of sentences (blocks of a few
    edges: one block a sentence here)."""
    for threads in ("1", "2"):
        _tune(tiny_model_dir, tiny_dev, tmp_path / threads, threads, "--algorithm", "lattice-mert",
              "--interpolation", "1", "--iterations", "2", "--n-best-size", "10")
    _same_runs(tmp_path)


def test_samplerank_chains_on_one_thread_and_two_threads_give_the_same_run(tiny_model_dir, tiny_dev, tmp_path):
    for threads in ("1", "2"):
        _tune(tiny_model_dir, tiny_dev, tmp_path / threads, threads, "--algorithm", "samplerank", "--epochs", "2",
              "--chains", "2", "--batch-size", "2", "--samples-per-sentence", "20", "--burn-in-per-sentence", "5",
              "--held-out", "2", "--chain-start", "decoder")
    _same_runs(tmp_path)


def test_binary_block_training_on_one_thread_and_two_threads_gives_the_same_weights(tiny_model_dir, tiny_dev,
                                                                                  tmp_path):
    for threads in ("1", "2"):
        _tune(tiny_model_dir, tiny_dev, tmp_path / threads, threads, "--algorithm", "costmargin", "--passes", "2",
              "--features", "binary", "--sgd-passes", "3", "--learning-rate", "0.05", "--oracle-beam", "20")
    one = (tmp_path / "1" / "sparse-weights.txt").read_bytes()
    assert one and one == (tmp_path / "2" / "sparse-weights.txt").read_bytes()


@pytest.mark.parametrize("verb", ["analyze", "sample"])
def test_analyze_and_sample_on_one_thread_and_two_threads_write_the_same_bytes(verb, tiny_model_dir, tiny_dev,
                                                                               tmp_path, capsys):
    options = {"analyze": ["--refs", str(tiny_dev / "dev.ref"), "--stack", "2", "--search", "stack"],
               "sample": ["--steps-per-sentence", "40", "--anneal", "2", "0.1", "--trace", "{}.trace",
                          "--refs", str(tiny_dev / "dev.ref"), "--chain-start", "decoder"]}[verb]
    printed = []
    for threads in ("1", "2"):
        out = tmp_path / threads
        assert main([verb, "-q", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i",
                     str(tiny_dev / "dev.src"), "-o", str(out), "--threads", threads,
                     *(o.format(out) for o in options)]) == 0
        printed.append(capsys.readouterr().out)
    assert (tmp_path / "1").read_bytes() == (tmp_path / "2").read_bytes() != b""
    assert printed[0] == printed[1]
    if verb == "sample":
        assert (tmp_path / "1.trace").read_bytes() == (tmp_path / "2.trace").read_bytes()


def _digest(model: TranslationModel) -> str:
    """A hash of every array the searches read from the model."""
    digest = hashlib.sha256()
    for holder in (model, model.phrases, model.full_table, *(lm.arrays for lm in model.lms)):
        values = vars(holder).values() if hasattr(holder, "__dict__") else holder
        for value in values:
            if isinstance(value, np.ndarray):
                digest.update(np.ascontiguousarray(value).view(np.uint8).tobytes())
    return digest.hexdigest()


def test_many_threads_decode_one_model_that_stays_read_only(tiny_model_dir):
    """Sixteen threads decode the same sentences many times over one model while another thread tries to write
    each of its arrays: every write is refused, every result is the serial one, and the model's bytes do not
    change."""
    model = TranslationModel.load(tiny_model_dir / "moses.ini")
    translator = Translator(model, n_best=5, tokenized=True)
    items = list(enumerate(SOURCES)) * 20
    serial = [(t.text, [e.to_line() for e in t.nbest]) for t in (translator.translate(*item) for item in items)]
    before = _digest(model)
    arrays = [value for holder in (model, model.phrases, model.full_table)
              for value in vars(holder).values() if isinstance(value, np.ndarray) and value.size]
    arrays += [value for lm in model.lms for value in lm.arrays if isinstance(value, np.ndarray) and value.size]
    refused = []

    def writer():
        for array in arrays:
            try:
                array.flat[0] = array.flat[0]
            except ValueError:
                refused.append(array)

    pool = ParallelMap(lambda state, item: state.translate(*item), translator, threads=16)
    writing = threading.Thread(target=writer)
    writing.start()
    threaded = [(t.text, [e.to_line() for e in t.nbest]) for t in pool.map(items)]
    writing.join()
    assert threaded == serial
    assert len(refused) == len(arrays) > 20
    assert _digest(model) == before


def test_the_kernels_a_decode_calls_release_the_gil():
    """Threads decode side by side only while they are inside these kernels (docs/decoding.md lists them)."""
    from pbmt.base import _nbest_writer_kernels
    from pbmt.model import _lm_kernels, _phrase_kernels
    from pbmt.search import _cube_kernels, _decoder_kernels, _future_kernels, _nbest_kernels, _options_kernels, \
        _output_kernels, _scoring_kernels

    kernels = (_cube_kernels.cube_kernel, _decoder_kernels.stack_kernel, _nbest_kernels.best_path,
               _nbest_kernels.k_best_paths, _phrase_kernels.lookup_spans, _options_kernels.table_options,
               _options_kernels.span_offsets, _future_kernels.future_table,
               _scoring_kernels.score_dense, _scoring_kernels.score_dense_paths, _lm_kernels.score_batch,
               _output_kernels.path_layout, _output_kernels.path_sparse, _nbest_writer_kernels.write_lines)
    assert [k.py_func.__name__ for k in kernels if not k.targetoptions.get("nogil")] == []


def test_the_sampler_and_line_search_kernels_release_the_gil():
    """pbmt sample's and SampleRank's chains, and lattice MERT's blocks of edges and sentences, run side by side
    on threads only inside these."""
    from pbmt.search import _lattice_kernels, _sampler_kernels

    kernels = (_sampler_kernels.run_chain, _sampler_kernels.neighbourhood, _sampler_kernels.apply,
               _sampler_kernels.init_chain, _lattice_kernels.edge_scores, _lattice_kernels.envelopes,
               _lattice_kernels.near_edges)
    assert [k.py_func.__name__ for k in kernels if not k.targetoptions.get("nogil")] == []
