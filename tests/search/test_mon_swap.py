"""The MON/SWAP block orientation model: decoder against brute force, orientation labels (Fig. 1)."""

import dataclasses

import numpy as np
import pytest

from pbmt.base.errors import PbmtError
from pbmt.metrics.bleu import reference_sets, segment_stats_ids, sentence_bleu_plus1
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import (Derivation, Orientation, derivation_blocks, model_score, score_derivation,
                                    sparse_features)
from pbmt.search.options import TranslationOptions
from pbmt.search.oracle import oracle_search
from pbmt.model.block_features import BlockWeights, sequence_names
from pbmt.model.sparse import SparseModel, WordClasses

from enumeration import mon_swap_derivations

L, R, N = Orientation.LEFT, Orientation.RIGHT, Orientation.NEUTRAL
NO_PRUNING = dict(stack_size=10**6, beam_threshold=0.0)
SEARCHES = {"stack": dict(search="stack"), "cube": dict(search="cube", pop_limit=0)}
SENTENCES = ["a b c", "c a e b", "a b c d e", "e d c b a", "b x a d"]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    model = TranslationModel.load(tiny_model_dir / "moses.ini")
    return dataclasses.replace(model, settings=SearchSettings(**NO_PRUNING, reordering="mon-swap"))


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("sentence", SENTENCES)
def test_decoder_equals_exhaustive_mon_swap(tiny, sentence, search):
    tiny = dataclasses.replace(tiny, settings=dataclasses.replace(tiny.settings, **SEARCHES[search]))
    options = TranslationOptions.build(tiny, tiny.vocab.ids(sentence.split()))
    everything = mon_swap_derivations(options)
    assert len(set(everything)) == len(everything)
    scores = np.array([score_derivation(d, options, tiny) @ tiny.weights for d in everything])
    every = decode(tiny, options, n_best=len(everything) + 5)
    assert every[0].score == pytest.approx(scores.max(), abs=1e-9)
    # the search space is exactly MON/SWAP: every sequence once, best first
    assert set(e.derivation for e in every) == set(everything)
    np.testing.assert_allclose([e.score for e in every], np.sort(scores)[::-1], atol=1e-9)
    for e in every:
        assert set(e.derivation.orientations().tolist()) <= {L, R, N}


def test_mon_swap_is_a_subset_of_unlimited_distortion(tiny):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("e d c b a".split()))
    free = dataclasses.replace(tiny, settings=SearchSettings(**NO_PRUNING, distortion_limit=-1))
    restricted = decode(tiny, options)[0].score
    assert decode(free, options)[0].score >= restricted - 1e-9
    assert len(decode(tiny, options, n_best=10**6)) < len(decode(free, options, n_best=10**6))


def test_orientations_of_figure_1():
    # Fig. 1: four blocks; b1 skips the first source phrase (N), b2 fills it (L), b3 continues right of b1
    # with b1's phrase between it and b2 (N), b4 is right-adjacent to b3 (R)
    fig1 = Derivation([1, 0, 3, 5], [3, 1, 5, 6], [0, 0, 0, 0])
    assert fig1.orientations().tolist() == [N, L, N, R]
    assert Derivation([0, 2], [2, 3], [0, 0]).orientations().tolist() == [R, R]  # monotone from the start
    assert Derivation([2, 0], [3, 2], [0, 0]).orientations().tolist() == [N, L]  # a swap at the start
    # a block left of its predecessor but not adjacent is not L
    assert Derivation([0, 4, 1], [1, 5, 3], [0, 0, 0]).orientations().tolist() == [R, N, N]


def test_unknown_reordering_mode_is_an_error():
    with pytest.raises(PbmtError, match="mon-swap"):
        SearchSettings(reordering="ibm")


REFERENCES = ["the lord said unto moses", "and the house of israel go", "moses said the lord"]


@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("reference", REFERENCES)
def test_oracle_equals_exhaustive_bleu(tiny, sentence, reference):
    options = TranslationOptions.build(tiny, tiny.vocab.ids(sentence.split()))
    ref = tiny.vocab.ids(reference.split())
    everything = mon_swap_derivations(options)
    words = [d.target_words(options) for d in everything]
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])])
    refs = reference_sets(np.array([0, len(ref)]), ref)
    stats = segment_stats_ids(offsets, np.concatenate(words), np.zeros(len(words), np.int64), refs)
    scores = sentence_bleu_plus1(stats)
    by_string = {}
    for w, s in zip(words, scores):
        by_string[w.tobytes()] = s
    expected = sorted(by_string.values(), reverse=True)[:5]

    found = oracle_search(options, ref, n_best=5, beam=10**5)
    np.testing.assert_allclose([f.bleu for f in found], expected, atol=1e-12)
    assert len({f.derivation.target_words(options).tobytes() for f in found}) == len(found)
    known = set(everything)
    for f in found:
        assert f.derivation in known
        assert by_string[f.derivation.target_words(options).tobytes()] == pytest.approx(f.bleu, abs=1e-12)


def test_oracle_with_a_small_beam_returns_valid_sequences(tiny):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("a b c d e".split()))
    found = oracle_search(options, tiny.vocab.ids("the lord said unto moses".split()), n_best=5, beam=2)
    assert 1 <= len(found) <= 5 and all(f.derivation.covers(5) for f in found)
    assert [f.bleu for f in found] == sorted((f.bleu for f in found), reverse=True)


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("sentence,boundary", [("a b c", False), ("c a e b", False), ("e d c b a", False),
                                               ("c a e b", True), ("e d c b a", True)])
def test_decoder_with_binary_features_equals_exhaustive_rescoring(tiny, sentence, boundary, search):
    """The block family alone, and with the boundary family (class pairs at block boundaries) beside it."""
    tiny = dataclasses.replace(tiny, settings=dataclasses.replace(tiny.settings, **SEARCHES[search]))
    rng = np.random.default_rng(5)
    options = TranslationOptions.build(tiny, tiny.vocab.ids(sentence.split()))
    everything = mon_swap_derivations(options)
    names = sorted({n for d in everything for n in sequence_names(derivation_blocks(d, options, tiny.vocab))})
    weights = BlockWeights(names, rng.normal(scale=0.5, size=len(names)))
    sparse = SparseModel.of_blocks(weights)
    if boundary:
        classes = SparseModel.new(WordClasses(("the", "lord", "said", "unto"), [0, 1, 1, 0], ("k0", "k1")))
        sparse = dataclasses.replace(classes, weights=rng.normal(size=classes.size), blocks=weights)
    with_blocks = dataclasses.replace(tiny, sparse=sparse)

    def total(d):
        blocks = sum(weights.weight.get(n, 0.0) * c
                     for n, c in sequence_names(derivation_blocks(d, options, tiny.vocab)).items())
        pairs = sparse_features(d, options, with_blocks) @ sparse.weights if boundary else 0.0
        return score_derivation(d, options, tiny) @ tiny.weights + blocks + pairs

    scores = np.array([total(d) for d in everything])
    block_options = TranslationOptions.build(with_blocks, options.sentence)  # local scores with the block features
    found = decode(with_blocks, block_options, n_best=len(everything) + 3)
    assert len(found) == len(everything)
    np.testing.assert_allclose([f.score for f in found], np.sort(scores)[::-1], atol=1e-9)
    for f in found[:10]:
        assert total(f.derivation) == pytest.approx(f.score, abs=1e-9)
        assert model_score(f.derivation, block_options, with_blocks) == pytest.approx(f.score, abs=1e-9)
