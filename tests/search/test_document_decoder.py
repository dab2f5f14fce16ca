"""Document decoding: annealing over a whole document with global features."""

import numpy as np
import pytest

from pbmt.features import build, name_features, parse_requests
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import Derivation, score_derivation
from pbmt.search.hypothesis import score_document
from pbmt.search.document_decoder import decode_document
from pbmt.search.options import TranslationOptions

DOCUMENT = ["a b c d e", "c a e b", "b x a d", "", "e d c b a", "a b a c"]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def test_zero_global_weights_score_at_least_the_stack_decoder(tiny):
    features = build(name_features(parse_requests("lexical-consistency:1,repetition,length-ratio:1.1"),
                                   tiny.layout.names, nbest=False), tiny.vocab)
    options = [TranslationOptions.build(tiny, tiny.vocab.ids(line.split())) for line in DOCUMENT]
    # the empty line's derivation has no blocks (the stack decoder returns none) but an LM score
    stack = sum(decode(tiny, o)[0].score if o.n_words else score_derivation(Derivation([], [], []), o, tiny)
                @ tiny.weights for o in options)
    result = decode_document(tiny, options, np.random.default_rng(5), features, steps_per_sentence=300)
    assert len(result.derivations) == len(DOCUMENT)
    for d, o, line in zip(result.derivations, options, DOCUMENT):  # every sentence, in order, covered once
        assert d.covers(len(line.split()))
        assert np.array_equal(o.sentence, tiny.vocab.ids(line.split(), add=False))
    dense = sum(score_derivation(d, o, tiny) for d, o in zip(result.derivations, options)) @ tiny.weights
    assert dense >= stack - 1e-9 and result.score == pytest.approx(dense)
    np.testing.assert_allclose(result.features, score_document(result.derivations, options, tiny, features))
    assert result.steps == 300 * len(DOCUMENT)


def test_a_consistency_weight_makes_the_document_more_consistent(tiny):
    (feature,) = build(name_features(parse_requests("lexical-consistency:1"), tiny.layout.names, nbest=False),
                       tiny.vocab)
    options = [TranslationOptions.build(tiny, tiny.vocab.ids(line.split())) for line in DOCUMENT]
    values = []
    for weight in (0.0, 20.0):
        result = decode_document(tiny, options, np.random.default_rng(1), [feature], np.array([weight]),
                                 steps_per_sentence=300)
        values.append(result.features[-1])
    assert values[1] > values[0]
