"""``pbmt tune``'s decode-optimise loop over sparse features: PRO, APRO and batch MIRA tune the n-best lists'
sparse features beside the dense ones, each iteration's decode reads the sparse weights the last one proposed
(its n-best features by those weights are the totals it reports), the tuned folder decodes with them, and a
resumed run ends where an uninterrupted one does."""

from __future__ import annotations

import numpy as np
import pytest

from pbmt.commands.cli import main
from pbmt.model.model import TranslationModel
from pbmt.model.sparse import SparseModel, SparseWeights, weight_name
from pbmt.tune.loop import DevDecoder, LoopSettings, tune
from pbmt.tune.mira import Mira
from pbmt.tune.pool import References
from resumption import assert_resumed_as_uninterrupted


def _nonzero(weights: SparseWeights) -> dict[str, float]:
    return {n: v for n, v in zip(weights.names, weights.values.tolist()) if v != 0.0}


@pytest.mark.parametrize("algorithm", ["pro", "apro", "mira"])
def test_pbmt_tune_tunes_the_sparse_weights_and_the_folder_decodes_with_them(algorithm, sparse_model_dir, tiny_dev,
                                                                             tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["tune", "-f", str(sparse_model_dir / "moses.ini"), "--tokenized", "--src", str(tiny_dev / "dev.src"),
                 "--refs", str(tiny_dev / "dev.ref"), "--out", str(out), "--algorithm", algorithm, "--iterations",
                 "2", "--n-best-size", "20", "--keep", "last",
                 *(["--mira-epochs", "5"] if algorithm == "mira" else ["--sparse-l1", "0.01"])]) == 0
    assert "sparse features with a non-zero weight" in capsys.readouterr().err
    start = _nonzero(SparseModel.read(sparse_model_dir).named_weights())
    proposed = _nonzero(SparseWeights.read(out / "run1.sparse-weights.txt"))
    assert proposed != start  # the sparse weights moved
    tuned = TranslationModel.load(out / "moses.ini")
    assert tuned.sparse is not None
    assert _nonzero(tuned.sparse.named_weights()) == _nonzero(SparseWeights.read(out / "run2.sparse-weights.txt"))
    assert main(["translate", "-q", "-f", str(out / "moses.ini"), "--tokenized", "-i", str(tiny_dev / "dev.src"),
                 "-o", str(tmp_path / "out.txt")]) == 0


@pytest.mark.parametrize("algorithm", ["mert", "perceptron"])
def test_a_dense_tuner_of_a_sparse_model_says_its_pool_scores_leave_the_sparse_features_out(
        algorithm, sparse_model_dir, tiny_dev, tmp_path, capsys):
    argv = ["tune", "-f", str(sparse_model_dir / "moses.ini"), "--tokenized", "--src", str(tiny_dev / "dev.src"),
            "--refs", str(tiny_dev / "dev.ref"), "--out", str(tmp_path / "run"), "--algorithm", algorithm,
            "--n-best-size", "5", *(["--iterations", "1"] if algorithm == "mert" else ["--passes", "2"])]
    assert main(argv) == 0
    active = np.count_nonzero(SparseModel.read(sparse_model_dir).named_weights().values)
    assert active and (f"tunes the dense weights alone, and its pool's scores leave out the model's sparse features "
                       f"({active} non-zero weights)") in capsys.readouterr().err
    assert main([*argv[:9], str(tmp_path / "quiet"), *argv[10:], "-q"]) == 0
    assert "note:" not in capsys.readouterr().err


class _Recorder:
    """A decoder that keeps every call's sparse weights file and n-best lists."""

    def __init__(self, decoder: DevDecoder):
        self.decoder = decoder
        self.calls = []

    def __call__(self, weights, sparse=None):
        nbest = self.decoder(weights, sparse)
        self.calls.append((np.array(weights), sparse, nbest))
        return nbest


def _loop(model, sources, refs, out, iterations, resume=False):
    with DevDecoder(model, sources, 10) as decoder:
        recorder = _Recorder(decoder)
        result = tune(recorder, References(refs), model.config, model.layout, Mira(epochs=5), out,
                      LoopSettings(n_best=10, max_iterations=iterations, output="last"), resume=resume,
                      sparse=model.sparse.named_weights(), model=model)
    return result, recorder.calls


def test_each_decode_scores_with_the_sparse_weights_the_last_iteration_proposed(sparse_model_dir, tiny_dev, tmp_path):
    model = TranslationModel.load(sparse_model_dir / "moses.ini")
    sources = (tiny_dev / "dev.src").read_text().splitlines()
    refs = (tiny_dev / "dev.ref").read_text().splitlines()
    result, calls = _loop(model, sources, refs, tmp_path / "whole", 3)
    assert len(calls) >= 2
    assert [sparse for _, sparse, _ in calls] == [None] + [tmp_path / "whole" / f"run{k}.sparse-weights.txt"
                                                           for k in range(1, len(calls))]
    fired = 0
    for number, (dense, sparse, nbest) in enumerate(calls, 1):
        named = model.sparse.named_weights() if sparse is None else SparseWeights.read(sparse)
        weight = dict(zip(named.names, named.values.tolist()))
        for entry in (e for entries in nbest for e in entries):
            features = np.concatenate([entry.features[name] for name in model.layout.names])
            total = features @ dense + sum(value * weight.get(weight_name(name), 0.0) for name, value in entry.sparse)
            assert total == pytest.approx(entry.total, abs=1e-9), (number, entry.text)
            fired += len(entry.sparse)
        if number > 1:  # the dense weights decoded are those the last iteration wrote
            assert np.allclose(dense, result.iterations[number - 2].new_weights)
    assert fired
    assert _nonzero(SparseWeights.read(tmp_path / "whole" / "run1.sparse-weights.txt")) != \
        _nonzero(model.sparse.named_weights())
    last = tmp_path / "whole" / f"run{len(calls)}.sparse-weights.txt"
    assert _nonzero(result.sparse) == _nonzero(SparseWeights.read(last))
    # the loop's last step gave the folder the model's pbmt.toml and the kept sparse weights: it is the tuned model
    tuned = TranslationModel.load(tmp_path / "whole" / "moses.ini")
    assert _nonzero(tuned.sparse.named_weights()) == pytest.approx(_nonzero(result.sparse))
    assert np.allclose(tuned.weights, result.weights, rtol=1e-8, atol=0.0)  # as moses.ini writes them, to 9 digits

    # stopped after one iteration and resumed: the same weights, sparse files and log as the uninterrupted run
    _loop(model, sources, refs, tmp_path / "resumed", 1)
    resumed, _ = _loop(model, sources, refs, tmp_path / "resumed", 3, resume=True)
    assert np.array_equal(resumed.weights, result.weights)
    for k in range(1, len(calls) + 1):
        assert ((tmp_path / "resumed" / f"run{k}.sparse-weights.txt").read_text()
                == (tmp_path / "whole" / f"run{k}.sparse-weights.txt").read_text())
    assert [r.new_weights for r in resumed.iterations] == [r.new_weights for r in result.iterations]


def test_each_decode_finds_its_table_pruned_by_the_thread_the_loop_started_after_the_fit(sparse_model_dir, tiny_dev,
                                                                                        tmp_path, monkeypatch):
    """``DevDecoder.prepare``: the loop hands the next decode's weights and sparse file over as soon as the fit
    has made them, and the table is pruned for them on a thread of its own while the loop writes its files; the
    run is the one of a decoder that prunes at the call (the recorder has no ``prepare``), byte for byte."""
    import threading

    model = TranslationModel.load(sparse_model_dir / "moses.ini")
    sources = (tiny_dev / "dev.src").read_text().splitlines()
    refs = (tiny_dev / "dev.ref").read_text().splitlines()
    expected, calls = _loop(model, sources, refs, tmp_path / "at-the-call", 3)
    pruned_on = []
    with_weights = TranslationModel.with_weights
    monkeypatch.setattr(TranslationModel, "with_weights", lambda self, weights: pruned_on.append(
        threading.current_thread().name) or with_weights(self, weights))
    with DevDecoder(model, sources, 10, threads=2) as decoder:
        result = tune(decoder, References(refs), model.config, model.layout, Mira(epochs=5), tmp_path / "ahead",
                      LoopSettings(n_best=10, max_iterations=3, output="last"), sparse=model.sparse.named_weights(),
                      model=model)
    assert len(calls) == 3 and len(pruned_on) == 3 and pruned_on[1:] == ["pbmt-prune"] * 2
    assert pruned_on[0] != "pbmt-prune"  # the first decode's weights are known at its call alone
    assert result.weights.tobytes() == expected.weights.tobytes()
    assert_resumed_as_uninterrupted(tmp_path / "ahead", tmp_path / "at-the-call",
                                    ("moses.ini", *(f"run{k}.sparse-weights.txt" for k in (1, 2, 3))))
