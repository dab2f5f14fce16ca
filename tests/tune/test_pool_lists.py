"""Tune's pool built from decoded n-best lists' arrays (``pool_from_lists``) is the pool the lists' entries make
one by one (``pool_from_entries``), array for array, on random lists of the tiny model with and without sparse
features."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbmt.base.errors import PbmtError
from pbmt.base.nbest import NBestEntry
from pbmt.model.features import FeatureLayout
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode_paths
from pbmt.search.options import TranslationOptions
from pbmt.search.output import NBestList
from pbmt.tune.loop import decoded_pool
from pbmt.tune.pool import Pool, References, pool_from_entries
from pbmt.tune.pool_lists import pool_from_lists

# source words of the tiny model, unknown words (passed through), one with characters a key must escape
WORDS = ["a", "b", "c", "d", "e", "x", "%_|", "a:b#c", "ñandú"]
TARGETS = ["the", "lord", "said", "go", "israel", "x", "ñandú", "unto", "and"]


@pytest.fixture(scope="module")
def models(tiny_model_dir, sparse_model_dir):
    search = SearchSettings(stack_size=20, distortion_limit=3)
    return [dataclasses.replace(TranslationModel.load(folder / "moses.ini"), settings=search)
            for folder in (tiny_model_dir, sparse_model_dir)]


def decoded(model, sentences, rng) -> list[NBestList]:
    lists = []
    for sentence, words in sentences:
        options = TranslationOptions.of_words(model, words)
        n_best = int(rng.choice([1, 5, 30]))
        lists.append(NBestList(sentence, decode_paths(model, options, n_best=n_best, distinct=bool(rng.integers(2))),
                               options, model))
    return lists


def assert_same_pool(a, b):
    for field in ("features", "stats", "offsets", "keys"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
        assert getattr(a, field).dtype == getattr(b, field).dtype
    assert a.texts == b.texts and a.sparse_names == b.sparse_names and a.layout == b.layout
    assert (a.sparse is None) == (b.sparse is None)
    if a.sparse is not None:
        for field in ("data", "indices", "indptr"):
            assert np.array_equal(getattr(a.sparse, field), getattr(b.sparse, field)), field


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sources=st.lists(st.lists(st.sampled_from(WORDS), max_size=6), min_size=1, max_size=5),
       ids=st.lists(st.integers(0, 3), min_size=5, max_size=5), sparse=st.booleans(),
       dedup=st.sampled_from(["derivation", "string"]), seed=st.integers(0, 2**16))
def test_a_pool_of_lists_arrays_is_the_pool_of_their_entries(models, sources, ids, sparse, dedup, seed):
    model = models[sparse]
    rng = np.random.default_rng(seed)
    refs = [" ".join(rng.choice(TARGETS, size=int(rng.integers(0, 7)))) for _ in range(4)]
    lists = decoded(model, list(zip(ids, sources)), rng)  # sentence ids in any order, repeated or absent
    by_entries = References(refs)
    expected = pool_from_entries([e for entries in lists for e in entries], model.layout, by_entries, dedup)
    by_arrays = References(refs)
    pool = pool_from_lists(lists, model.layout, by_arrays, dedup)
    assert pool is not None
    assert_same_pool(pool, expected)
    assert by_arrays.vocab._words == by_entries.vocab._words  # new words join the references' in the same order


def test_the_loop_pools_other_lists_entry_by_entry(models):
    """Lists not kept as arrays, lists of another layout, or sentence ids outside the references are pooled (or
    refused) as the entries are."""
    model = models[1]
    lists = decoded(model, [(0, ["a", "b"]), (1, ["c", "x"]), (2, [])], np.random.default_rng(1))
    references = References(["the lord", "go", ""])
    pool, bleu = decoded_pool(lists, model.layout, references)
    plain, plain_bleu = decoded_pool([tuple(entries) for entries in lists], model.layout, references)
    assert_same_pool(pool, plain) and bleu == plain_bleu
    other = FeatureLayout(model.layout.names[:-1], model.layout.types[:-1], model.layout.sizes[:-1])
    assert pool_from_lists(lists, other, references) is None
    with pytest.raises(PbmtError, match="differ from the expected"):
        decoded_pool(lists, other, references)
    assert pool_from_lists(lists, model.layout, References(["the lord", "go"])) is None
    with pytest.raises(PbmtError, match="sentence id 2 is outside the 2 references"):
        decoded_pool(lists, model.layout, References(["the lord", "go"]))
    with pytest.raises(PbmtError, match="no translation of dev sentence"):
        decoded_pool([lists[0], ()], model.layout, references)


def test_entries_without_a_segmentation_are_keyed_by_their_features(models):
    model = models[0]
    lists = decoded(model, [(0, [])], np.random.default_rng(2))
    entry = lists[0][0]
    assert entry.segmentation == () and isinstance(entry, NBestEntry)
    pool = pool_from_lists(lists, model.layout, References(["the"]))
    assert_same_pool(pool, pool_from_entries([entry], model.layout, References(["the"])))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(st.lists(st.sampled_from(WORDS), max_size=5), min_size=3, max_size=3),
       second=st.lists(st.lists(st.sampled_from(WORDS), max_size=5), min_size=3, max_size=3),
       sparse=st.booleans(), dedup=st.sampled_from(["derivation", "string"]), seed=st.integers(0, 2**16))
def test_the_loops_batch_keeps_repeats_and_merges_to_the_deduplicated_pool(models, first, second, sparse, dedup,
                                                                          seed):
    """decoded_pool's batch keeps a sentence's repeated keys (the loop merges it next); merged into an empty pool
    and into a pool of an earlier decode it gives the pools the deduplicated batch gives, array for array, and
    the same dev BLEU."""
    model = models[sparse]
    rng = np.random.default_rng(seed)
    references = References([" ".join(rng.choice(TARGETS, size=int(rng.integers(0, 7)))) for _ in range(3)])
    earlier = decoded(model, list(enumerate(first)), rng)
    lists = decoded(model, list(enumerate(second)), rng)
    entries = [e for nbest in lists for e in nbest]
    unique = pool_from_entries(entries, model.layout, references, dedup)
    batch, bleu = decoded_pool(lists, model.layout, references, dedup)
    assert batch.n_candidates == len(entries) >= unique.n_candidates
    assert np.array_equal(batch.stats[batch.offsets[:-1]], unique.stats[unique.offsets[:-1]])  # the 1-bests
    for pool in (Pool.empty(model.layout, 3), pool_from_entries([e for nbest in earlier for e in nbest],
                                                                model.layout, references, dedup)):
        merged, n_new = pool.merge(batch)
        expected, expected_new = pool.merge(unique)
        assert_same_pool(merged, expected)
        assert n_new == expected_new
    assert_same_pool(Pool.empty(model.layout, 3).merge(batch)[0], unique)
