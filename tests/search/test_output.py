"""N-best entries' sparse features, counted by a kernel over a sentence's derivations (``sparse_counts``), equal
each derivation's counted from scratch by the families' own reference functions."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbmt.model.block_features import BlockWeights, sequence_names
from pbmt.model.distortion_bins import NAMES as JUMP_NAMES
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.model.sparse import BLOCK_KINDS, SparseModel, WordClasses, nbest_name
from pbmt.search.decoder import decode_paths
from pbmt.search.derivation import derivation_blocks, jump_features, sparse_features
from pbmt.search.options import TranslationOptions
from pbmt.search.output import NBestList, derivation_layout, sparse_counts, word_alignment
from pbmt.search.transitions import transitions

# source words of the tiny model, an unknown word, and unknown words that pass through with the characters
# block-family names escape
WORDS = ["a", "b", "c", "d", "e", "x", "%_|", "a:b#c"]


def reference_pairs(derivation, options, model) -> tuple[tuple[str, float], ...]:
    """The sparse features ``derivation`` fires from scratch, (n-best name, count): the boundary family's in
    id order, the distortion family's in bin order, then the block family's listed kinds by name."""
    pairs = []
    if model.sparse.boundary is not None:
        counts = sparse_features(derivation, options, model)
        pairs += [(model.sparse.boundary.name(i), float(counts[i])) for i in np.flatnonzero(counts).tolist()]
    if model.sparse.jumps is not None:
        counts = jump_features(derivation)
        pairs += [(JUMP_NAMES[i], float(counts[i])) for i in np.flatnonzero(counts).tolist()]
    if model.sparse.blocks is not None:
        names = sequence_names(derivation_blocks(derivation, options, options.vocab))
        pairs += sorted((nbest_name(name), float(count)) for name, count in names.items()
                        if name.startswith(model.sparse.block_prefixes))
    return tuple(pairs)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    model = TranslationModel.load(tiny_model_dir / "moses.ini")
    return dataclasses.replace(model, settings=SearchSettings(stack_size=20, distortion_limit=3))


def with_families(model, families, kinds, seed=3):
    """``model`` with the sparse ``families`` (random weights; the block family's ``kinds``)."""
    rng = np.random.default_rng(seed)
    classes = WordClasses(("the", "lord", "said", "unto", "moses"), rng.integers(3, size=5), ("k0", "k1", "k2"))
    sparse = SparseModel.empty(families, classes, kinds)
    if "boundary" in families:
        sparse = sparse.with_weights(rng.normal(scale=0.3, size=sparse.size))
    if "block" in families:
        sparse = dataclasses.replace(sparse, blocks=BlockWeights(["w:a|the", "bi:<s>|the", "ori:N:b|lord"],
                                                                 rng.normal(size=3)))
    if "distortion" in families:
        sparse = dataclasses.replace(sparse, jumps=rng.normal(scale=0.3, size=len(JUMP_NAMES)))
    return dataclasses.replace(model, sparse=sparse)


FAMILIES = [("boundary",), ("distortion",), ("block",), ("boundary", "block", "distortion")]
KINDS = [BLOCK_KINDS, ("word", "orient"), ("bigram",), ("length", "block")]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS), max_size=6), families=st.sampled_from(FAMILIES),
       kinds=st.sampled_from(KINDS), n_best=st.sampled_from([1, 7, 40]), distinct=st.booleans())
def test_sparse_counts_equal_each_derivations_from_scratch(tiny, words, families, kinds, n_best, distinct):
    model = with_families(tiny, families, kinds)
    options = TranslationOptions.of_words(model, words)
    paths = decode_paths(model, options, n_best=n_best, distinct=distinct)
    counts = sparse_counts(paths, options, model)
    assert len(counts.offsets) == len(paths) + 1
    for i in range(len(paths)):
        assert counts.pairs(i) == reference_pairs(paths.derivation(i, options), options, model)
    assert len(set(counts.names)) == len(counts.names)  # each name once, so the writer's ids are the names
    entries = NBestList(4, paths, options, model)
    assert entries.text() == "".join(entry.to_line() + "\n" for entry in entries)


def test_a_derivation_of_no_blocks_fires_the_sentence_start_and_end(tiny):
    model = with_families(tiny, ("boundary", "block", "distortion"), BLOCK_KINDS)
    options = TranslationOptions.of_words(model, [])
    counts = sparse_counts(decode_paths(model, options), options, model)
    assert [name for name, _ in counts.pairs(0)] == ["pb_<s>_</s>", "Block_bi:<s>|</s>"]


def test_an_nbest_list_scores_with_the_searchs_transitions_as_with_its_own(tiny):
    """The search's transitions, handed over, give the entries the dense features ``NBestList`` finds alone,
    with and without sparse features (whose transitions the dense features leave out)."""
    for model in (tiny, with_families(tiny, ("boundary", "block", "distortion"), BLOCK_KINDS)):
        options = TranslationOptions.of_words(model, "e d x b a".split())
        scores = transitions(model, options)
        paths = decode_paths(model, options, n_best=30, sentence_transitions=scores)
        alone = decode_paths(model, options, n_best=30)
        assert all(np.array_equal(a, b) for a, b in zip((paths.offsets, paths.chosen, paths.totals),
                                                         (alone.offsets, alone.chosen, alone.totals)))
        handed = NBestList(2, paths, options, model, scores)
        assert handed == NBestList(2, paths, options, model) and len(handed) == 30
        assert handed.text() == NBestList(2, paths, options, model).text()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), n_best=st.integers(1, 8))
def test_a_derivations_layout_is_its_blocks_laid_out_one_by_one(tiny, words, n_best):
    """``derivation_layout`` (one kernel call) against each block's target words and alignment links placed one
    after another in Python, the alignment sorted as (source, target) tuples, for every derivation of an n-best
    list (unknown words among them: an option linked to itself)."""
    options = TranslationOptions.of_words(tiny, words)
    for scored in decode_paths(tiny, options, n_best=n_best).scored(options):
        chosen = scored.derivation.option
        target, starts, links = [], [], []
        for option in chosen.tolist():
            starts.append(len(target))
            lo, hi = options.align_offsets[option], options.align_offsets[option + 1]
            links += [(int(options.start[option]) + int(s), len(target) + int(t)) for s, t in options.align[lo:hi]]
            target += options.tgt_words[options.tgt_offsets[option]:options.tgt_offsets[option + 1]].tolist()
        word_ids, block_starts, alignment = derivation_layout(chosen, options)
        assert word_ids.tolist() == target and block_starts.tolist() == starts
        assert alignment == sorted(links) and all(type(x) is int for link in alignment for x in link)
        assert word_alignment(scored.derivation, options, tiny) == alignment
