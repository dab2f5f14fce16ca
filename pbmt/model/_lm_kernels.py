"""Numba kernels of the n-gram language model: trie construction and scoring.

The model is a trie of n-gram entries, stored as one array of records
(``ENTRY``). Entry 0 is the empty context (root); entries ``1 .. n_words``
are the unigrams, entry ``1 + w`` for local word ``w``; every longer n-gram
lives in slot s of a ``_hashtable`` table keyed (entry of its first k-1
words, its last word) and is entry ``1 + n_words + s``, so that the table's
keys are the records' ``key`` field and one probe brings the whole record
into cache. Per entry:

- ``prob``: log10 probability, ``backoff``: log10 backoff (float32);
- ``suffix``: the entry of the longest proper suffix that is in the model
  (the n-gram without its first word, unless a pruned model lacks it);
- ``next_state``: the state after an n-gram has been matched: the entry
  itself, cut to at most order-1 words and then shortened through ``suffix``
  until it can still matter (it is the prefix of a longer n-gram or has a
  nonzero backoff: KenLM's state minimisation);
- ``children``: a 64-bit Bloom filter of the last words of the n-grams that
  extend the entry (bit ``_word_bit(w)`` for each); a context whose filter
  lacks w's bit is passed without probing the table, which saves most of the
  probes that would miss.

A state is an int64 entry id; 0 is the empty state. p(w | state) is the
probability of the entry (c, w) for the longest c on the chain state,
suffix[state], ..., 0 for which it exists, plus the backoffs of the chain's
contexts longer than c (the standard back-off rule, which KenLM implements).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.base.hashtable import find_slot, insert
from pbmt.base.vocab import EOS

ENTRY = np.dtype(
    [
        ("key", np.int64),
        ("prob", np.float32),
        ("backoff", np.float32),
        ("suffix", np.int32),
        ("next_state", np.int32),
        ("children", np.uint64),
    ],
    align=True,
)

LMArrays = namedtuple(
    "LMArrays",
    [
        "word_map",  # int32[len(vocab) at load time]: global word id -> local id
        "unk",  # int: local id of <unk>, for global ids past the end of word_map
        "begin",  # int: the state after <s>
        "n_words",  # int: number of local words
        "entries",  # ENTRY[1 + n_words + capacity]
        "keys",  # int64[capacity]: the hash table, entries["key"][1 + n_words:]
    ],
)
"""The arrays the scoring kernels read, passed as one argument."""

MISSING_CONTEXT, DUPLICATE = 1, 2


@njit(cache=True)
def count_fields(text):
    """Number of whitespace-separated fields on each line of ``text``.

    text: uint8[n], lines separated by ``\\n``, no final newline; whitespace
    is what ``bytes.split`` splits on (space and ``\\t \\n \\v \\f \\r``).
    Returns int32[n_lines].
    """
    n_lines = 1
    for c in text:
        if c == 10:
            n_lines += 1
    counts = np.zeros(n_lines, dtype=np.int32)
    line = 0
    in_field = False
    for c in text:
        if c == 10:
            line += 1
            in_field = False
        elif c == 32 or 9 <= c <= 13:
            in_field = False
        elif not in_field:
            counts[line] += 1
            in_field = True
    return counts


@njit(cache=True)
def link_order(ids, prob, backoff, entries, keys, n_words, order):
    """Add the n-grams of one order k >= 2 to the trie.

    ids: int32[n, k] local word ids, prob and backoff: float32[n] (log10);
    entries and keys as in ``LMArrays``, holding every n-gram of order < k;
    order: int8[n_entries] is updated. Returns (row, problem): (-1, 0) on
    success, else the first bad row and MISSING_CONTEXT (its first k-1 words
    are not an entry) or DUPLICATE.
    """
    n, k = ids.shape
    base = 1 + n_words
    for i in range(n):
        p = np.int64(ids[i, 0]) + 1
        for j in range(1, k - 1):
            s = find_slot(keys, n_words, p, ids[i, j])
            if s < 0:
                return i, MISSING_CONTEXT
            p = base + s
        s, new = insert(keys, n_words, p, ids[i, k - 1])
        if not new:
            return i, DUPLICATE
        e = base + s
        entries[p].children |= _word_bit(ids[i, k - 1])
        order[e] = k
        entries[e].prob = prob[i]
        entries[e].backoff = backoff[i]
        entries[e].suffix = _suffix(ids[i], p, entries, keys, n_words, order)
    return -1, 0


# Called by kernels only: compiled without the CPython and C-function wrappers a call from Python needs
# (their unboxing of tuples of arrays is compiled and optimised anew; docs/decoding.md, "The first run").
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _suffix(words, prefix, entries, keys, n_words, order):
    """The entry of the longest proper suffix present of the n-gram ``words``
    (int32[k]) whose first k-1 words are entry ``prefix``."""
    k = words.shape[0]
    base = 1 + n_words
    if k == 2:
        return words[1] + 1
    shorter = entries[prefix].suffix
    if order[shorter] == k - 2:
        s = find_slot(keys, n_words, shorter, words[k - 1])
        if s >= 0:
            return base + s
    # A pruned model lacks the n-gram without its first word.
    for start in range(2, k - 1):
        e = np.int64(words[start]) + 1
        for j in range(start + 1, k):
            s = find_slot(keys, n_words, e, words[j])
            if s < 0:
                e = -1
                break
            e = base + s
        if e >= 0:
            return e
    return words[k - 1] + 1


@njit(cache=True)
def minimal_states(entries, order, top):
    """Fill ``entries.next_state``; see the module docstring.

    order: int8[n_entries] (0 for the root and free slots), top: the model's
    order. An entry with children is the prefix of a longer n-gram.
    """
    entries[0].next_state = 0
    for k in range(1, top + 1):
        for e in range(entries.shape[0]):
            if order[e] != k:
                continue
            if k < top and (entries[e].children != 0 or entries[e].backoff != 0):
                entries[e].next_state = e
            else:
                entries[e].next_state = entries[entries[e].suffix].next_state


# A direct-mapped cache of LM scores, for searches that score the same few (state, word) pairs again and
# again: a hit costs one access where the model's own lookup costs several cache misses. key: LM state << 32 |
# word (all ones: empty); lm: which of the model's LMs (one cache serves all of them); prob: log10 p(word |
# state); state: the state after word. 32 bytes, so that a lookup touches one cache line; 2**14 of them (512 KB)
# fit in a core's L2 cache, and a larger cache's extra hits save less than its misses in L2 cost. The slot is
# masked by the cache's own size, so a kernel compiled for other bits never reads past it.
CACHE_BITS = 14
CACHE_ENTRY = np.dtype([("key", np.uint64), ("prob", np.float64), ("state", np.int64), ("lm", np.int64)],
                       align=True)


@njit(cache=True, inline="always")
def cached_score_word(lm, cache, which, state, word):
    """``score_word`` of LM number ``which`` (``lm``) through ``cache`` (CACHE_ENTRY[2**CACHE_BITS]), which it
    updates."""
    key = (np.uint64(state) << np.uint64(32)) | np.uint64(word)
    slot = np.int64(((key + np.uint64(which) * np.uint64(0xD6E8FEB86659FD93)) * np.uint64(0x9E3779B97F4A7C15))
                    >> np.uint64(64 - CACHE_BITS) & np.uint64(cache.shape[0] - 1))
    entry = cache[slot]
    if entry.key == key and entry.lm == which:
        return entry.prob, entry.state
    p, new_state = score_word(lm, np.int64(state), np.int64(word))  # one specialisation for every caller
    entry.key = key
    entry.lm = which
    entry.prob = p
    entry.state = new_state
    return p, new_state


@njit(cache=True)
def score_word(lm, state, word):
    """log10 p(word | state) and the state after it.

    lm: LMArrays, state: int64 entry id (0 = empty), word: global word id
    (ids past the end of ``lm.word_map`` are <unk>). Returns
    (float64 log10 probability, int64 new state).
    """
    w = lm.word_map[word] if word < lm.word_map.shape[0] else lm.unk
    bit = _word_bit(w)
    backed_off = 0.0
    e = np.int64(w) + 1
    c = np.int64(state)
    while c != 0:
        context = lm.entries[c]
        if context.children & bit:
            s = find_slot(lm.keys, lm.n_words, c, w)
            if s >= 0:
                e = 1 + lm.n_words + s
                break
        backed_off += context.backoff
        c = np.int64(context.suffix)
    return lm.entries[e].prob + backed_off, np.int64(lm.entries[e].next_state)


@njit(cache=True, inline="always")
def _word_bit(w):
    """The bit of local word ``w`` in the ``children`` filters (Fibonacci hashing)."""
    return np.uint64(1) << np.uint64((np.int64(w) * 0x9E3779B1 >> 26) & 63)


@njit(cache=True, nogil=True)
def score_sequence(lm, words, bos, eos):
    """Per-token log10 probabilities of one sentence (float64[n + eos]).

    words: int32[n] global ids; starts from the state after <s> if ``bos``
    (else the empty state) and scores </s> at the end if ``eos``.
    """
    out = np.empty(words.shape[0] + (1 if eos else 0))
    state = np.int64(lm.begin if bos else 0)
    for i in range(words.shape[0]):
        out[i], state = score_word(lm, state, np.int64(words[i]))
    if eos:
        out[-1], state = score_word(lm, state, np.int64(EOS))
    return out


_LANES = 8


@njit(cache=True, nogil=True)
def score_batch(lm, offsets, words, bos, eos):
    """log10 probability of each sentence of a CSR corpus (float64[n]).

    offsets: int64[n+1], words: int32[offsets[-1]] global ids; sentence i is
    ``words[offsets[i]:offsets[i+1]]``; ``bos`` and ``eos`` as in
    ``score_sequence``. Scores _LANES sentences in turn, one word each, so
    that the processor overlaps their (independent) cache misses.
    """
    n = offsets.shape[0] - 1
    totals = np.zeros(n)
    extra = 1 if eos else 0
    start = np.int64(lm.begin if bos else 0)
    sentence = np.full(_LANES, n, dtype=np.int64)
    pos = np.zeros(_LANES, dtype=np.int64)
    state = np.zeros(_LANES, dtype=np.int64)
    waiting = 0
    active = 0
    for g in range(_LANES):
        waiting = _next_sentence(offsets, extra, waiting)
        if waiting < n:
            sentence[g], pos[g], state[g] = waiting, offsets[waiting], start
            waiting += 1
            active += 1
    while active > 0:
        for g in range(_LANES):
            s = sentence[g]
            if s == n:
                continue
            word = words[pos[g]] if pos[g] < offsets[s + 1] else EOS
            p, state[g] = score_word(lm, state[g], np.int64(word))
            totals[s] += p
            pos[g] += 1
            if pos[g] == offsets[s + 1] + extra:
                waiting = _next_sentence(offsets, extra, waiting)
                if waiting < n:
                    sentence[g], pos[g], state[g] = waiting, offsets[waiting], start
                    waiting += 1
                else:
                    sentence[g] = n
                    active -= 1
    return totals


@njit(cache=True, inline="always")
def _next_sentence(offsets, extra, s):
    """The first sentence from ``s`` on with a word to score (n if none)."""
    n = offsets.shape[0] - 1
    while s < n and offsets[s + 1] + extra == offsets[s]:
        s += 1
    return s
