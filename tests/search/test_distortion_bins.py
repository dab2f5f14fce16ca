"""The distortion-bin family: bins of hand-made jumps, every n-best entry's bins against a recount from its
own segmentation and its total against the dense features and the bins by their weights, the searches against
exhaustive search, the weights file, and pbmt tune moving the bins' weights."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

from pbmt.commands.cli import main
from pbmt.features.translation import Translator
from pbmt.model.distortion_bins import NAMES, jump_counts
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.model.sparse import SparseModel, SparseWeights
from pbmt.search.decoder import decode
from pbmt.search.derivation import jump_features, model_score
from pbmt.search.options import TranslationOptions

from support import TINY_SOURCES
from test_decoder import all_derivations  # tests/search is on the path (pytest prepend mode)
from test_sparse import NO_PRUNING


@pytest.fixture(scope="module")
def distortion_model_dir(tiny_model_dir, tmp_path_factory):
    """The tiny model with the distortion-bin family and weights large enough to change the search's choices."""
    folder = tmp_path_factory.mktemp("tiny-distortion")
    shutil.copytree(tiny_model_dir, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    model = TranslationModel.load(folder / "moses.ini")
    jumps = np.random.default_rng(3).normal(0.0, 1.0, len(NAMES))
    SparseModel(None, np.zeros(0), jumps=jumps).write(folder, model.toml_tables(folder))
    return folder


def test_jumps_are_binned_by_width_and_direction():
    # blocks [2, 4), [0, 2), [4, 5), [9, 10), [5, 9): jumps 2, -4, 2, 4, -5
    counts = jump_counts([(2, 4), (0, 2), (4, 5), (9, 10), (5, 9)])
    assert dict(zip(NAMES, counts.tolist())) == {**dict.fromkeys(NAMES, 0.0), "db_f2": 2.0, "db_b4-5": 2.0,
                                                 "db_f4-5": 1.0}
    assert jump_counts([(0, 1), (1, 3), (12, 13), (3, 4)]).tolist() == [2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]


def _recount(entry) -> dict[str, float]:
    """The bins of an n-best entry's jumps from its segmentation (source spans in target order)."""
    counts = jump_counts((start, end) for start, end, _, _ in entry.segmentation)
    return {name: count for name, count in zip(NAMES, counts.tolist()) if count}


def test_nbest_entries_carry_the_bins_of_their_jumps_and_score_them(distortion_model_dir):
    model = TranslationModel.load(distortion_model_dir / "moses.ini")
    assert model.sparse.families == ("distortion",)
    weight = dict(zip(NAMES, model.sparse.jumps.tolist()))
    translator = Translator(model, n_best=30, tokenized=True)
    plain = Translator(dataclasses.replace(model, sparse=None), tokenized=True)
    fired, moved = 0, 0
    for k, line in enumerate(TINY_SOURCES):
        translation = translator.translate(k, line)
        for entry in translation.nbest:
            assert dict(entry.sparse) == _recount(entry)
            features = np.concatenate([entry.features[name] for name in model.layout.names])
            total = features @ model.weights + sum(weight[name] * value for name, value in entry.sparse)
            assert entry.total == pytest.approx(total, abs=1e-9)
            fired += len(entry.sparse)
        moved += plain.translate(k, line).text != translation.text
    assert fired and moved  # the bins' weights change what the search finds


@pytest.mark.parametrize("search", [dict(search="stack"), dict(search="cube", pop_limit=0)])
@pytest.mark.parametrize("sentence", ["c a e b", "e d c b a"])
def test_the_searches_with_distortion_bins_equal_exhaustive_search(distortion_model_dir, sentence, search):
    model = TranslationModel.load(distortion_model_dir / "moses.ini")
    model = dataclasses.replace(model, settings=SearchSettings(**NO_PRUNING, **search, distortion_limit=2))
    options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
    scores = np.sort([model_score(d, options, model) for d in all_derivations(options, 2)])[::-1]
    found = decode(model, options, n_best=10)
    np.testing.assert_allclose([f.score for f in found], scores[:10], atol=1e-9)
    assert np.count_nonzero(jump_features(found[0].derivation)) >= 1


def test_the_weights_file_holds_the_bins(distortion_model_dir, tmp_path):
    model = SparseModel.read(distortion_model_dir)
    assert model.named_weights().names == NAMES
    (tmp_path / "w").write_text("db_f2 0.5\ndb_b9+ -1\n")
    named = model.weights_from(SparseWeights.read(tmp_path / "w")).named_weights()
    assert dict(zip(named.names, named.values.tolist())) == {**dict.fromkeys(NAMES, 0.0), "db_f2": 0.5,
                                                             "db_b9+": -1.0}
    (tmp_path / "bad").write_text("db_f7 1\n")
    with pytest.raises(Exception, match="bad:1"):
        SparseWeights.read(tmp_path / "bad")


def test_pbmt_tune_tunes_the_bins(distortion_model_dir, tiny_dev, tmp_path):
    out = tmp_path / "run"
    assert main(["tune", "-q", "-f", str(distortion_model_dir / "moses.ini"), "--tokenized", "--src",
                 str(tiny_dev / "dev.src"), "--refs", str(tiny_dev / "dev.ref"), "--out", str(out), "--algorithm",
                 "mira", "--iterations", "2", "--n-best-size", "20", "--mira-epochs", "5", "--keep", "last"]) == 0
    start = SparseModel.read(distortion_model_dir).named_weights()
    tuned = TranslationModel.load(out / "moses.ini").sparse.named_weights()
    assert tuned.names == NAMES and not np.array_equal(tuned.values, start.values)
