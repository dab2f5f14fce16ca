"""The n-best consensus feature: how much of an n-best list agrees with an entry's n-grams."""

from __future__ import annotations

import numpy as np

from pbmt.base.csr import segment_softmax
from pbmt.features.base import GlobalFeature
from pbmt.features.registry import register
from pbmt.base.vocab import Vocab

CONSENSUS_ORDERS = 4


@register("consensus", prefix="Consensus", nbest_only=True)
class Consensus(GlobalFeature):
    """n-gram posteriors of orders 1..4 in the entry's n-best list (n-best rescoring only).

    For n = 1..4, the mean over the hypothesis's distinct n-grams of their
    n-best posterior: the probability mass of the list's entries that contain
    the n-gram, the entries weighted by ``exp(total)`` of the decoder's model
    score (natural log), normalised over the list. In [0, 1]; 0 for a
    hypothesis shorter than n. Four values under one name.
    """

    size = CONSENSUS_ORDERS
    document_level = False

    def __init__(self, argument: str | None, vocab: Vocab):
        pass

    def values(self, document):
        raise ValueError("consensus compares the entries of an n-best list: only rescoring can compute it")

    def nbest_values(self, lists) -> np.ndarray:
        """``float64[n_cand, 4]`` for every entry of ``NBestLists``."""
        word_offsets, words = lists.words
        lengths = np.diff(word_offsets)
        n_cand = lists.n_candidates
        values = np.zeros((n_cand, CONSENSUS_ORDERS))
        if not len(words):
            return values
        candidate = np.repeat(np.arange(n_cand), lengths)
        position = np.arange(len(words)) - word_offsets[candidate]
        list_of = lists.sentence[candidate]
        filled = np.append(lists.offsets[:-1][np.diff(lists.offsets) > 0], lists.offsets[-1])
        posterior = segment_softmax(lists.totals, filled)
        keys = words.astype(np.int64)
        n_words = max(len(lists.vocab), 1)
        for n in range(1, CONSENSUS_ORDERS + 1):
            fits = position <= lengths[candidate] - n
            if n > 1:
                # the n-gram at i: the (n-1)-gram at i, extended by word i + n - 1, renumbered densely
                ends = np.minimum(np.arange(len(words)) + n - 1, len(words) - 1)
                keys = np.unique(np.where(fits, keys * n_words + words[ends], -1), return_inverse=True)[1]
            at = np.flatnonzero(fits)
            # each distinct n-gram of a candidate once
            _, first = np.unique(candidate[at] * (keys.max() + 1) + keys[at], return_index=True)
            owner, key = candidate[at][first], keys[at][first]
            groups, group = np.unique(list_of[at][first] * (keys.max() + 1) + key, return_inverse=True)
            mass = np.bincount(group, weights=posterior[owner], minlength=len(groups))
            counts = np.bincount(owner, minlength=n_cand)
            values[:, n - 1] = np.bincount(owner, weights=mass[group], minlength=n_cand) / np.maximum(counts, 1)
        return values
