"""Sparse features (boundary and block families): decoder and sampler scores equal from-scratch ones; files
round-trip."""

import dataclasses

import numpy as np
import pytest

from pbmt.base.errors import FormatError, PbmtError
from pbmt.model.block_features import BOS_WORD, EOS_WORD, BlockWeights, bigram_name, local_names, orient_name
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.model.sparse import SparseModel, SparseWeights, WordClasses
from pbmt.search.decoder import decode
from pbmt.search.derivation import model_score, sparse_features
from pbmt.search.options import TranslationOptions
from pbmt.search.sampler import Sampler, gloss
from pbmt.tune.loop import tuned_config

from test_decoder import SENTENCES, all_derivations  # tests/search is on the path (pytest prepend mode)
from test_sampler import assert_moves_equal_rescoring

NO_PRUNING = dict(stack_size=10**6, beam_threshold=0.0)


def with_random_sparse(model, words, n_classes, seed):
    rng = np.random.default_rng(seed)
    classes = WordClasses(tuple(words), rng.integers(n_classes, size=len(words)),
                          tuple(f"k{i}" for i in range(n_classes)))
    sparse = SparseModel.new(classes)
    return dataclasses.replace(model, sparse=sparse.with_weights(rng.normal(size=sparse.size)))


@pytest.fixture(scope="module", params=["lexicalised", "distance-only"])
def tiny_sparse(request, tiny_model_dir, tmp_path_factory):
    ini = tiny_model_dir / "moses.ini"
    if request.param == "distance-only":  # recombination then keys on the previous block's end and last class
        folder = tmp_path_factory.mktemp("tiny-no-lr")
        text = ini.read_text().replace("path=phrase-table.gz", f"path={tiny_model_dir / 'phrase-table.gz'}")
        text = "\n".join(line for line in text.splitlines() if not line.startswith("LexicalReordering"))
        (folder / "moses.ini").write_text(text + "\n")
        ini = folder / "moses.ini"
    model = TranslationModel.load(ini)
    return with_random_sparse(model, ["the", "lord", "said", "unto", "moses", "and", "house"], 3, 5)


@pytest.mark.parametrize("search", [dict(search="stack"), dict(search="cube", pop_limit=0)])
@pytest.mark.parametrize("sentence", SENTENCES)
def test_decoder_with_boundary_features_equals_exhaustive_search(tiny_sparse, sentence, search):
    model = dataclasses.replace(tiny_sparse, settings=SearchSettings(**NO_PRUNING, **search, distortion_limit=2))
    options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
    everything = all_derivations(options, 2)
    scores = np.sort([model_score(d, options, model) for d in everything])[::-1]
    found = decode(model, options, n_best=10)
    np.testing.assert_allclose([f.score for f in found], scores[:10], atol=1e-9)
    for f in found:
        assert f.score == pytest.approx(model_score(f.derivation, options, model), abs=1e-9)
    assert np.count_nonzero(sparse_features(found[0].derivation, options, model)) >= 1


def test_sampler_deltas_with_boundary_features_equal_rescoring(tiny_sparse, bible):
    rng = np.random.default_rng(1)
    big = TranslationModel.load(bible / "model" / "moses.ini")
    big = with_random_sparse(big, [big.vocab.word(i) for i in range(3, len(big.vocab), 2)], 20, 3)
    source = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:2]
    cases = [(tiny_sparse, s) for s in SENTENCES[:3]] + [(big, s) for s in source]
    for model, sentence in cases:
        options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
        sampler = Sampler(model, options)
        assert sampler.feature_names[-1] == "Sparse0"
        assert_moves_equal_rescoring(sampler, sampler.start(gloss(options)), rng, 60, atol=1e-8)


def random_block_weights(model, sentences, rng):
    """The block family with a random weight on every name the options of ``sentences`` can fire: block,
    word-pair and length names, orientations, and the bigrams of their last and first target words."""
    names, lasts, firsts = set(), {BOS_WORD}, {EOS_WORD}
    for sentence in sentences:
        options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
        words = model.vocab.words(options.sentence)
        for o in range(len(options)):
            source, target = words[options.start[o]:options.end[o]], model.vocab.words(options.target(o))
            names.update(local_names(source, target))
            names.update(orient_name(k, source, target) for k in "RLN")
            lasts.add(target[-1])
            firsts.add(target[0])
    names.update(bigram_name(a, b) for a in lasts for b in firsts)
    names = sorted(names)
    return BlockWeights(names, rng.normal(scale=0.5, size=len(names)))


@pytest.mark.parametrize("boundary", [False, True])
def test_sampler_deltas_with_block_features_equal_rescoring(tiny_sparse, boundary):
    """The block family alone and beside the boundary family: the sampler scores it through the decoders'
    transition form and option-local block scores; every move's deltas equal the names counted from scratch
    (``BlockWeights.score`` over ``sequence_names``), an unknown word passed through included."""
    rng = np.random.default_rng(11)
    sentences = SENTENCES[1:4] + ["b x a d"]
    blocks = random_block_weights(tiny_sparse, sentences, rng)
    sparse = dataclasses.replace(tiny_sparse.sparse, blocks=blocks) if boundary else SparseModel.of_blocks(blocks)
    model = dataclasses.replace(tiny_sparse, sparse=sparse)
    for sentence in sentences:
        options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
        sampler = Sampler(model, options)
        assert sampler.feature_names[-1] == "Sparse0"
        chain = sampler.start(gloss(options))
        assert chain.features[-1] != 0.0
        assert_moves_equal_rescoring(sampler, chain, rng, 40, atol=1e-8)


@pytest.mark.parametrize("search", ["stack", "cube"])
def test_decoder_scores_with_boundary_features_equal_rescoring_on_the_shared_model(bible, search):
    model = TranslationModel.load(bible / "model" / "moses.ini", SearchSettings(search=search))
    model = with_random_sparse(model, [model.vocab.word(i) for i in range(3, len(model.vocab))], 30, 8)
    for line in (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:2]:
        options = TranslationOptions.build(model, model.vocab.ids(line.split()))
        for found in decode(model, options, n_best=5):
            assert found.score == pytest.approx(model_score(found.derivation, options, model), abs=1e-6)


def test_sparse_model_files_round_trip_and_load_with_the_model(bible, tmp_path):
    model = TranslationModel.load(bible / "model" / "moses.ini")
    tuned_config(model.config, model.layout, model.weights).write(tmp_path / "moses.ini")  # absolute paths
    sparse = SparseModel.new(WordClasses(("the", "lord", "said", "and"), [0, 1, 1, 0], ("k0", "k1")))
    weights = np.zeros(sparse.size)
    weights[[1, 5, 7]] = [0.5, -1.25, 3e-5]
    sparse.with_weights(weights).write(tmp_path, {"preprocess": {"tokenize": True, "lowercase": True}})
    loaded = TranslationModel.load(tmp_path / "moses.ini")
    assert loaded.preprocessing.tokenize and loaded.preprocessing.lowercase
    np.testing.assert_array_equal(loaded.sparse.weights, weights)
    classes = loaded.sparse.boundary.classes
    assert {w: classes.names[c] for w, c in zip(classes.words, classes.classes)} == {
        "the": "k0", "lord": "k1", "said": "k1", "and": "k0"}
    assert len((tmp_path / "sparse-weights.txt").read_text().splitlines()) == 4  # a comment and 3 weights
    (tmp_path / "sparse-weights.txt").write_text("pb_k0_k1 1.0\npb_nope_k1 2\n")
    with pytest.raises(PbmtError, match="pb_nope_k1 is not a feature"):
        TranslationModel.load(tmp_path / "moses.ini")
    (tmp_path / "sparse-weights.txt").write_text("pb_k0_k1 x\n")
    with pytest.raises(FormatError, match="sparse-weights.txt:1: weight 'x' is not a number"):
        SparseWeights.read(tmp_path / "sparse-weights.txt")
    (tmp_path / "word-classes.txt").write_text("the\tk0\nthe\tk1\n")
    with pytest.raises(FormatError, match="word-classes.txt:2: word 'the' already has a class"):
        WordClasses.read(tmp_path / "word-classes.txt")


def test_word_classes_of_ids_follow_the_vocabulary_given_not_one_at_the_same_address():
    """The class table is cached per vocabulary: another vocabulary of the same length, even at the address of a
    freed one (CPython reuses it), gets its own classes; a pickled copy carries no cached table."""
    import gc
    import pickle

    from pbmt.base.vocab import Vocab

    classes = WordClasses(("house", "green"), [0, 1], ("k0", "k1"))
    for _ in range(20):
        first = Vocab(["house", "green"])
        assert classes.of_ids(first, first.ids(["house", "green"])).tolist() == [0, 1]
        del first
        gc.collect()
        second = Vocab(["green", "house"])  # same length, ids swapped
        assert classes.of_ids(second, second.ids(["house", "green"])).tolist() == [0, 1]
    assert "_cached_table" not in pickle.loads(pickle.dumps(classes)).__dict__
