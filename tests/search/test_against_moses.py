"""pbmt's decoder and features against Moses's own output under the same moses.ini."""

import dataclasses
import itertools

import pytest

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.output import derivation_from_entry
from pbmt.base.nbest import read_nbest

from support import assert_reproduces_moses

N_SENTENCES = 40


@pytest.fixture(scope="module")
def moses(bible):
    model = TranslationModel.load(bible / "model" / "moses.ini")
    sources = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:N_SENTENCES]
    nbest = [list(group) for _, group in itertools.groupby(
        itertools.takewhile(lambda e: e.sentence < N_SENTENCES, read_nbest(bible / "model" / "dev.moses.nbest100.gz")),
        key=lambda e: e.sentence)]
    options = [TranslationOptions.build(model, model.vocab.ids(s.split())) for s in sources]
    return model, options, nbest


def test_features_of_moses_derivations_are_reproduced(moses):
    model, options, nbest = moses
    checked = 0
    for opts, entries in zip(options, nbest):
        for entry in entries[:10]:
            assert_reproduces_moses(entry, opts, model)
            checked += 1
    assert checked == 10 * N_SENTENCES


@pytest.mark.parametrize("search", ["stack", "cube"])
def test_best_score_at_least_moses(moses, search):
    model, options, nbest = moses
    model = dataclasses.replace(model, settings=SearchSettings(search=search))
    # Moses prints six significant digits: compare with its 1-best rescored exactly
    worse = []
    for opts, entries in zip(options, nbest):
        ours = decode(model, opts)[0]
        theirs = score_derivation(derivation_from_entry(entries[0], opts, model), opts, model) @ model.weights
        if ours.score < theirs - 1e-6:
            worse.append((entries[0].sentence, ours.score, theirs))
    assert not worse, worse
