"""A model with two LexicalReordering lines (two tables, each its own feature and weights), as Moses 1 loads
them: each one's columns are what a model with it alone gives, the searches find enumeration's best, and
Moses 1 scores the same derivations alike."""

import dataclasses
import gzip

import numpy as np
import pytest

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import model_score, score_derivation
from pbmt.search.options import TranslationOptions

from enumeration import all_derivations
from repo_data import REPO
from support import TINY_SOURCES, assert_reproduces_moses, moses_nbest

MOSES = REPO.parent / "shared" / "tools" / "moses" / "bin" / "moses"
LINE = "LexicalReordering name=LexicalReordering0 num-features=6 type=wbe-msd-bidirectional-fe-allff"


@pytest.fixture(scope="module")
def two_tables(tiny_model_dir, tmp_path_factory):
    """The tiny model with a second reordering table (the first's probabilities in reverse order, so each
    orientation scores differently) as LexicalReordering1, and the same model with that table alone."""
    folder = tmp_path_factory.mktemp("two-reorderings")
    for name in ("phrase-table.gz", "reordering-table.gz"):
        (folder / name).write_bytes((tiny_model_dir / name).read_bytes())
    with gzip.open(tiny_model_dir / "reordering-table.gz", "rt") as f:
        rows = [line.rstrip("\n").split(" ||| ") for line in f]
    with gzip.open(folder / "second-table.gz", "wt") as f:
        f.write("".join(" ||| ".join([*r[:2], " ".join(reversed(r[2].split())), *r[3:]]) + "\n" for r in rows))
    tiny = (tiny_model_dir / "moses.ini").read_text()
    second = LINE.replace("LexicalReordering0", "LexicalReordering1")
    both = tiny.replace(
        "path=reordering-table.gz\n", f"path=reordering-table.gz\n{second} input-factor=0 output-factor=0 "
        "path=second-table.gz\n").replace(
        "LexicalReordering0= 0.3 0.2 0.1 0.3 0.2 0.1\n",
        "LexicalReordering0= 0.3 0.2 0.1 0.3 0.2 0.1\nLexicalReordering1= 0.1 0.4 0.2 0.05 0.3 0.2\n")
    (folder / "moses.ini").write_text(both)
    (folder / "second-alone.ini").write_text(tiny.replace("path=reordering-table.gz", "path=second-table.gz"))
    return folder


def test_each_table_is_a_feature_of_its_own(two_tables, tiny_model_dir):
    """Every derivation of the tiny sentences (enumerated): LexicalReordering1's columns equal those a model with
    the second table alone gives its one reordering feature, and LexicalReordering0's those of the tiny model."""
    model = TranslationModel.load(two_tables / "moses.ini")
    alone = TranslationModel.load(two_tables / "second-alone.ini")
    tiny = TranslationModel.load(tiny_model_dir / "moses.ini")
    assert [n for n in model.layout.names if n.startswith("Lex")] == ["LexicalReordering0", "LexicalReordering1"]
    checked, differ = 0, 0
    for sentence in TINY_SOURCES[:5]:
        options = TranslationOptions.of_words(model, sentence.split())
        options_alone, options_tiny = (TranslationOptions.of_words(m, sentence.split()) for m in (alone, tiny))
        assert np.array_equal(options.tgt_words, options_alone.tgt_words)
        for d in all_derivations(options, model.settings.distortion_limit):
            ours = model.layout.as_dict(score_derivation(d, options, model))
            assert ours["LexicalReordering1"] == pytest.approx(
                alone.layout.as_dict(score_derivation(d, options_alone, alone))["LexicalReordering0"], abs=1e-9)
            assert ours["LexicalReordering0"] == pytest.approx(
                tiny.layout.as_dict(score_derivation(d, options_tiny, tiny))["LexicalReordering0"], abs=1e-9)
            checked += 1
            differ += ours["LexicalReordering0"] != pytest.approx(ours["LexicalReordering1"], abs=1e-3)
    assert checked > 100 and differ > checked / 2


@pytest.mark.parametrize("search", ["stack", "cube"])
def test_searches_find_enumerations_best(two_tables, search):
    model = TranslationModel.load(two_tables / "moses.ini")
    exact = dataclasses.replace(model, settings=SearchSettings(stack_size=10**6, beam_threshold=0.0, pop_limit=0,
                                                              search=search, distortion_limit=2))
    for sentence in TINY_SOURCES:
        options = TranslationOptions.of_words(model, sentence.split())
        best = max(model_score(d, options, model) for d in all_derivations(options, 2))
        found = decode(exact, options, n_best=10)
        assert found[0].score == pytest.approx(best, abs=1e-6)
        for f in found:
            assert f.score == pytest.approx(model_score(f.derivation, options, model), abs=1e-6)


@pytest.mark.skipif(not MOSES.exists(), reason=f"Moses 1 not found at {MOSES}")
def test_two_tables_agree_with_moses(two_tables, tmp_path):
    """Moses 1 on the same moses.ini: every feature (both reordering features' six columns) and the total of its
    10-best entries equal pbmt's rescoring of the same derivations."""
    model = TranslationModel.load(two_tables / "moses.ini")
    for sentence, entries in zip(TINY_SOURCES, moses_nbest(MOSES, two_tables, TINY_SOURCES, tmp_path / "nbest.txt")):
        options = TranslationOptions.of_words(model, sentence.split())
        for entry in entries:
            assert "LexicalReordering1" in entry.features
            assert_reproduces_moses(entry, options, model)
