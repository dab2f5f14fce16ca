"""Lattice MERT against n-best MERT on a pool of every complete path of the same graphs."""

import dataclasses

import sys

import numpy as np
import pytest

from pbmt.commands.cli import main
from pbmt.base.config import MosesConfig
from pbmt.metrics.bleu import bleu
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.lattice import Lattices
from pbmt.features.translation import Translator
from pbmt.tune.lattice_mert import LatticeLines, LatticeMert
from pbmt.tune.mert import Mert, PoolLines
from pbmt.tune.pool import Pool, References, tuned_columns
from pbmt.tune.tuner import TuningData

from lattice_paths import complete_paths, path_words

SENTENCES = ["a b c", "c a e b", "b d a", "e d c b a", "a c e", "d e"]


@pytest.fixture(scope="module")
def graphs(tiny_model_dir):
    """The tiny model's lattices of SENTENCES (no pruning, distortion limit 2), references made of other
    sentences' paths so that BLEU varies, and the pool of every complete path of every lattice."""
    tiny = TranslationModel.load(tiny_model_dir / "moses.ini")
    model = dataclasses.replace(tiny, settings=SearchSettings(stack_size=10**6, beam_threshold=0.0,
                                                              distortion_limit=2))
    translator = Translator(model, n_best=5, tokenized=True)
    lattices = [translator.translate_with_lattice(i, line)[1] for i, line in enumerate(SENTENCES)]
    paths = [complete_paths(x) for x in lattices]
    rng = np.random.default_rng(11)
    refs = [" ".join(path_words(x, p[int(rng.integers(len(p)))])) for x, p in zip(lattices, paths)]
    references = References(refs)
    features = np.concatenate([np.array([x.features()[p].sum(axis=0) for p in ps]) for x, ps in zip(lattices, paths)])
    texts = tuple(" ".join(path_words(x, p)) for x, ps in zip(lattices, paths) for p in ps)
    sentence = np.repeat(np.arange(len(SENTENCES)), [len(p) for p in paths])
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in paths])]).astype(np.int64)
    pool = Pool(model.layout, features, references.stats(texts, sentence), offsets,
                np.arange(len(texts), dtype=np.uint64), texts)
    return model, lattices, references, pool


def test_lattice_line_search_equals_the_pool_of_all_paths(graphs):
    model, lattices, references, pool = graphs
    free = tuned_columns(model.layout, ("UnknownWordPenalty0",))
    lattice_lines = LatticeLines(Lattices.concatenate(lattices), references, free)
    pool_lines = PoolLines(pool, free)
    rng = np.random.default_rng(2)
    point = model.weights[free]
    np.testing.assert_array_equal(lattice_lines.sentence_stats(point), pool_lines.sentence_stats(point))
    lattice_lines.at(point)
    pool_lines.at(point)
    for _ in range(20):
        direction = rng.standard_normal(len(point))
        direction /= np.abs(direction).sum()
        gamma, score = lattice_lines.search(direction, None, -np.inf, np.inf)
        assert (gamma, score) == pytest.approx(pool_lines.search(direction, None, -np.inf, np.inf), abs=1e-9)
        # within a segment the best interval's BLEU is the same; its clipped ends may place the step elsewhere
        low, high = -0.2, 0.5
        gamma, score = lattice_lines.search(direction, None, low, high)
        assert score == pytest.approx(pool_lines.search(direction, None, low, high)[1], abs=1e-12)
        assert low < gamma < high
        assert lattice_lines.sentence_stats(point + gamma * direction).sum(axis=0) @ np.ones(10) > 0
        np.testing.assert_array_equal(lattice_lines.sentence_stats(point + gamma * direction),
                                      pool_lines.sentence_stats(point + gamma * direction))


def test_lattice_mert_fits_what_mert_fits_on_the_pool_of_all_paths(graphs):
    """Och's unbounded search: each line search is the same, so the climbs are the same."""
    model, lattices, references, pool = graphs
    params = dict(restarts=2, random_directions=3, max_step=None, keep_signs=False, significance=0.0)
    lattice = LatticeMert(margin=None, **params).fit(TuningData(pool=pool, lattices=lattices, references=references),
                                        model.weights, np.random.default_rng(4))
    nbest = Mert(**params).fit(TuningData(pool=pool), model.weights, np.random.default_rng(4))
    np.testing.assert_allclose(lattice.weights_, nbest.weights_, rtol=0, atol=1e-9)
    assert lattice.score_ == pytest.approx(nbest.score_, abs=1e-12)
    assert lattice.score_ > pool.bleu(model.weights)


def test_near_lattices_hold_the_paths_within_the_margin(graphs):
    model, lattices, _, _ = graphs
    joined = Lattices.concatenate(lattices)
    a = joined.scores(model.weights)
    for margin in (0.05, 0.5, 2.0):
        near = joined.near(a, margin, threads=2)
        b = near.scores(model.weights)
        for s, lattice in enumerate(lattices):
            full = sorted(float(lattice.features()[p].sum(axis=0) @ model.weights) for p in complete_paths(lattice))
            lo, hi = near.edge_offsets[s], near.edge_offsets[s + 1]
            x = near.joined
            sentence = dataclasses.replace(x, source=x.source[lo:hi], target=x.target[lo:hi], option=x.option[lo:hi],
                                           n_nodes=int(near.node_offsets[s + 1] - near.node_offsets[s]))
            kept = [(float(b[lo:hi][p].sum()), p) for p in complete_paths(sentence)]
            within = sorted(score for score, _ in kept if score >= full[-1] - margin)
            assert within == pytest.approx([score for score in full if score >= full[-1] - margin], abs=1e-9)
            # and no edge but those of such paths: paths through kept edges may score lower
            on_them = {e for score, p in kept if score >= full[-1] - margin for e in p}
            assert on_them == set(range(hi - lo))


def test_lattice_mert_near_the_point_scores_its_weights_on_every_path(graphs):
    """A climb over the paths near each round's point keeps a step only as every path scores it; with a margin
    that keeps every path it is the climb over every path."""
    model, lattices, references, pool = graphs
    data = TuningData(pool=pool, lattices=lattices, references=references)
    params = dict(restarts=1, random_directions=3)
    near = LatticeMert(margin=0.2, **params).fit(data, model.weights, np.random.default_rng(4))
    free = tuned_columns(model.layout, ("UnknownWordPenalty0",))
    every_path = LatticeLines(Lattices.concatenate(lattices), references, free)
    assert near.score_ == pytest.approx(bleu(every_path.sentence_stats(near.weights_[free]).sum(axis=0)), abs=1e-12)
    assert near.score_ > pool.bleu(model.weights)
    wide = LatticeMert(margin=1e9, **params).fit(data, model.weights, np.random.default_rng(4))
    exact = LatticeMert(margin=None, **params).fit(data, model.weights, np.random.default_rng(4))
    np.testing.assert_array_equal(wide.weights_, exact.weights_)
    assert wide.n_line_searches_ == exact.n_line_searches_


def test_lattice_mert_needs_the_graphs(graphs):
    model, _, _, pool = graphs
    with pytest.raises(Exception, match="search graphs"):
        LatticeMert().fit(TuningData(pool=pool, lattices=[], references=pool), model.weights,
                          np.random.default_rng(0))


def test_pbmt_tune_lattice_mert(tiny_model_dir, tiny_dev, tmp_path, capsys, monkeypatch):
    argv = ["tune", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tiny_dev / "dev.src"),
            "--refs", str(tiny_dev / "dev.ref"), "--tokenized", "--out", str(tmp_path / "out"),
            "--interpolation", "1",  # undamped: a dev set this small would take half steps
            "--algorithm", "lattice-mert", "--iterations", "2", "--n-best-size", "10"]
    assert main(argv[:-4] + ["--iterations", "1", "--n-best-size", "10", "-q"]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # progress bars show on a terminal only
    assert main(argv + ["--resume"]) == 0  # progress shown or not is no setting of the run: it resumes
    err = capsys.readouterr().err
    assert "iteration 2: dev BLEU" in err
    assert "lattice MERT" in err and "line searches" in err  # the fit's progress bar
    rows = [line.split("\t") for line in (tmp_path / "out" / "log.tsv").read_text().splitlines()[1:]]
    assert len(rows) == 2
    assert float(rows[1][2]) > float(rows[0][2])  # the references are reachable 4th-best translations
    weights = MosesConfig.read(tmp_path / "out" / "moses.ini").weights
    assert sum(abs(w) for name, ws in weights.items() if name != "UnknownWordPenalty0" for w in ws) == \
        pytest.approx(1.0, abs=1e-8)
    with pytest.raises(SystemExit) as usage_error:
        main(argv[:-6] + ["--algorithm", "lattice-mert", "--iterations", "1", "--restarts", "-1"])
    assert usage_error.value.code == 2
