"""Tune's pool of decoded n-best lists, built from the lists' arrays in bulk.

A tuning iteration decodes every dev sentence to an n-best list (``pbmt.search.output.NBestList``, kept as
arrays) and pools them (``pbmt.tune.pool``). Making each list's entries (``NBestEntry``: a dict of feature
tuples, a string, tuples of blocks) to read their features, text and key back out of them was most of the time
the main thread spent between two decodes (a 100-best list of all of dev is 100,000 entries), with decoding
threads idle. Here the features are the lists' rows as they are, the hypotheses are written and the dedup keys
hashed by kernels without the lock (``pbmt.tune._pool_kernels``, ``pbmt.base.nbest.block_keys``), the BLEU
statistics counted from the hypotheses' bytes (``References.token_stats``), and the sparse features stacked as
one CSR matrix: the same pool, array for array, as ``pool_from_entries`` makes of the lists' entries.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from pbmt.base import csr
from pbmt.base.nbest import block_keys, hypothesis_keys
from pbmt.model.features import FeatureLayout
from pbmt.search.output import NBestList
from pbmt.tune._pool_kernels import hypothesis_text
from pbmt.tune.pool import Pool, References, check_dedup, entry_key, sorted_pool, sparse_rows


def pool_from_lists(lists: Sequence[NBestList], layout: FeatureLayout, references: References,
                    dedup: str = "derivation", unique: bool = True) -> Pool | None:
    """The pool ``pool_from_entries`` makes of the entries of ``lists`` (each list's entries in order, the lists
    in order), duplicates removed (``unique=False``: kept, as ``pool_from_entries`` keeps them); None when it may
    differ from that pool, or where ``pool_from_entries`` raises an error (any list's features not ``layout``'s
    or not finite, a sentence id outside ``references``, a word that is not one token as the references split
    text), so that the caller makes the pool of the entries."""
    check_dedup(dedup)
    if not lists or len(set(layout.names)) != len(layout.names) or not all(
            isinstance(nbest, NBestList) and nbest.layout.names == layout.names and nbest.layout.sizes == layout.sizes
            for nbest in lists):
        return None
    parts = [nbest.arrays() for nbest in lists]
    entries = [entries for entries, _, _ in parts]
    sentences = np.repeat(np.array([nbest.sentence for nbest in lists], np.int64), [len(nbest) for nbest in lists])
    if not np.all((sentences >= 0) & (sentences < references.n_sentences)):
        return None
    features = np.concatenate([e.values for e in entries]).reshape(len(sentences), layout.size)
    if not np.all(np.isfinite(features)):
        return None
    words = [word for _, vocabulary, _ in parts for word in vocabulary]
    if len(" ".join(words).split()) != len(words):  # a word empty or holding what str.split() splits at
        return None
    encoded = [word.encode("utf-8") for word in words]
    string_offsets = csr.offsets(np.fromiter(map(len, encoded), np.int64, len(encoded)))
    string_bytes = np.frombuffer(b"".join(encoded), np.uint8)
    word_offsets, word_ids = _stacked(entries, "word_offsets", "words", [len(vocabulary) for _, vocabulary, _ in parts])
    text, spans, tokens = hypothesis_text(word_offsets, word_ids, string_offsets, string_bytes)

    order = np.argsort(sentences, kind="stable")
    hypotheses = bytes(text).decode("utf-8").split("\n")
    texts = [hypotheses[i] for i in order.tolist()]
    stats = references.token_stats(text, *csr.take(word_offsets, tokens, order), sentences[order])
    if dedup == "string":
        keys = hypothesis_keys(text, spans)
    else:
        block_offsets, blocks = _stacked(entries, "block_offsets", "blocks")
        keys = block_keys(text, spans, block_offsets, blocks)
        starts = csr.offsets(np.array([len(nbest) for nbest in lists], np.int64))
        for i in np.flatnonzero(np.diff(block_offsets) == 0).tolist():  # no segmentation: keyed by the features
            k = int(np.searchsorted(starts, i, side="right")) - 1
            keys[i] = entry_key(lists[k][i - int(starts[k])], features[i], dedup)
    sparse_names = [names[len(layout.names):] for _, _, names in parts]
    return sorted_pool(layout, references, sentences, order, features, keys, texts, stats,
                       *_sparse(entries, sparse_names, len(layout.names)), unique=unique)


def _stacked(entries: Sequence, offsets: str, data: str, bases: Sequence[int] | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """The CSR fields ``offsets`` and ``data`` of every list's ``Entries`` as one CSR (entries in order); with
    ``bases``, each list's data are ids into its own rows of ``bases[k]`` strings, made ids into their
    concatenation."""
    lengths = np.concatenate([np.diff(getattr(e, offsets)) for e in entries])
    rows = [getattr(e, data) for e in entries]
    if bases is not None:
        starts = csr.offsets(np.asarray(bases, np.int64))[:-1]
        rows = [row + start for row, start in zip(rows, starts.tolist())]
    return csr.offsets(lengths), np.concatenate(rows)


def _sparse(entries: Sequence, names: Sequence[Sequence[str]], n_dense: int) -> tuple[tuple[str, ...], object]:
    """``sparse_matrix`` of the lists' entries: the sparse names in order of first sight over the entries, and a
    CSR matrix of their values (None when no entry has one); ``names``: each list's sparse names, which its
    ``sparse_names`` (less ``n_dense``) index."""
    index: dict[str, int] = {}
    named = [np.array([index.setdefault(name, len(index)) for name in own], np.int64) for own in names]
    seen = np.concatenate([own[e.sparse_names - n_dense] for own, e in zip(named, entries)])
    lengths = np.concatenate([np.diff(e.sparse_offsets) for e in entries])
    values = np.concatenate([e.sparse_values for e in entries]).astype(np.float64)
    fired, first = np.unique(seen, return_index=True)
    fired = fired[np.argsort(first)]
    column = np.zeros(len(index), np.int64)
    column[fired] = np.arange(len(fired))
    strings = list(index)
    return tuple(strings[k] for k in fired.tolist()), sparse_rows(values, column[seen], lengths, len(fired))
