"""Numba kernels of the operation sequence model (``pbmt.model.osm``) in the feature contract's signatures
(``pbmt.model._feature_kernels``).

The feature's state row: ``[0]`` the n-gram state of the operations so far,
``[1]`` the next source position j, ``[2]`` the frontier E (one past the
rightmost source word generated), ``[3:3 + WORDS]`` the coverage, a bit per
source word generated. Moses's OSM keeps the open gaps as a set; here they
follow from the coverage: an open gap starts at every source position before
E that is not generated while the one before it is (or that is 0), except the
current position j (a gap opens there only when the generation leaves it),
which ``tests/model/test_osm.py`` checks against the set on every step.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.model._feature_kernels import register_kernels
from pbmt.model._lm_kernels import cached_score_word

# the kinds of a block's steps (pbmt.model.osm.program)
GENERATE, CONTINUE, SOURCE_ONLY, TARGET_ONLY = 0, 1, 2, 3
# the fixed operations' ids in OSMData.fixed
GAP, FORWARD, CONTINUE_CEPT = 0, 1, 2
WORDS = 4  # int64 words of coverage in the state
MAX_WORDS = 64 * WORDS  # the longest sentence the state covers

OSMData = namedtuple("OSMData", [
    "lm",  # LMArrays of the operations' n-gram model
    "cache",  # LMCache.entries: the calling thread's cache of LM scores
    "which",  # int: the feature's key in the cache
    "offsets",  # int64[n_opt + 1]: option o's steps are offsets[o] .. offsets[o + 1] - 1
    "kinds",  # int8[n_steps]: GENERATE, CONTINUE, SOURCE_ONLY or TARGET_ONLY
    "positions",  # int32[n_steps]: the source position a step generates (-1: TARGET_ONLY)
    "ops",  # int32[n_steps]: the id of a step's operation in the model's vocabulary (CONTINUE: unused)
    "fixed",  # int32[3]: the ids of Insert Gap, Jump Forward and Continue Source Cept
    "jumps",  # int32[MAX_WORDS + 1]: jumps[n] is the id of Jump Back (n)
    "n_scores",  # int: 5, or 1 (the n-gram score alone)
])


@njit(cache=True, inline="always")
def _covered(state, i):
    return (state[3 + (i >> 6)] >> (i & 63)) & 1 == 1


@njit(cache=True, inline="always")
def _gap_starts(state, i, frontier):
    """Whether an open gap can start at source position ``i``: before the frontier, not generated, and the word
    before it generated (or ``i`` is 0)."""
    return i < frontier and not _covered(state, i) and (i == 0 or _covered(state, i - 1))


@njit(cache=True)
def osm_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """The operations of ``option``'s steps, with the reordering operations that reach each source word from
    the state's position, scored by the n-gram model (log10, from the state's history), and Moses's four
    counts; the state after them to ``new_state``."""
    for k in range(state.shape[0]):
        new_state[k] = state[k]
    lm_state, j, frontier = new_state[0], new_state[1], new_state[2]
    log10 = width = opened_gaps = open_gaps = alone = 0.0
    for step in range(data.offsets[option], data.offsets[option + 1]):
        kind = data.kinds[step]
        if kind == TARGET_ONLY:
            q, lm_state = cached_score_word(data.lm, data.cache, data.which, lm_state, data.ops[step])
            log10 += q
            continue
        position = data.positions[step]
        opened = False
        if j < position:
            if not _covered(new_state, j):
                q, lm_state = cached_score_word(data.lm, data.cache, data.which, lm_state, data.fixed[GAP])
                log10 += q
                opened = True
            if j == frontier:
                j = position
            else:
                q, lm_state = cached_score_word(data.lm, data.cache, data.which, lm_state, data.fixed[FORWARD])
                log10 += q
                j = frontier
        if position < j:
            if j < frontier and not _covered(new_state, j):
                q, lm_state = cached_score_word(data.lm, data.cache, data.which, lm_state, data.fixed[GAP])
                log10 += q
                opened = True
            target = position
            while not _gap_starts(new_state, target, frontier):
                target -= 1
            n = 0
            for i in range(target, frontier):
                n += _gap_starts(new_state, i, frontier)
            q, lm_state = cached_score_word(data.lm, data.cache, data.which, lm_state, data.jumps[n])
            log10 += q
            j = target
        if j < position:
            q, lm_state = cached_score_word(data.lm, data.cache, data.which, lm_state, data.fixed[GAP])
            log10 += q
            opened = True
            j = position
        if kind != CONTINUE:
            first = 0
            while _covered(new_state, first):
                first += 1
            width += position - first
        alone += kind == SOURCE_ONLY
        operation = data.fixed[CONTINUE_CEPT] if kind == CONTINUE else data.ops[step]
        q, lm_state = cached_score_word(data.lm, data.cache, data.which, lm_state, operation)
        log10 += q
        new_state[3 + (position >> 6)] |= np.int64(1) << (position & 63)
        j = position + 1
        frontier = max(frontier, j)
        opened_gaps += opened
        for i in range(frontier):
            open_gaps += i != j and _gap_starts(new_state, i, frontier)
    new_state[0], new_state[1], new_state[2] = lm_state, j, frontier
    out[0] += log10
    if data.n_scores == 5:
        out[1] += width
        out[2] += opened_gaps
        out[3] += open_gaps
        out[4] += alone


@njit(cache=True)
def osm_estimates(data, width, out):
    """Each option's steps alone (``osm_transition`` from the empty n-gram state, source position 0, nothing
    covered; its positions within the phrase pair): Moses's estimate of a phrase pair out of context. ``width``:
    the state's width; ``out``: ``float64[n_opt, data.n_scores]``, zeros in, the values added."""
    state = np.zeros(width, np.int64)
    new_state = np.empty(width, np.int64)
    for option in range(data.offsets.shape[0] - 1):
        osm_transition(data, state, new_state, 0, 0, -1, 0, 0, option, out[option])


@njit(cache=True)
def osm_end(data, state, last_option, out):
    """Nothing at the sentence end: Moses's OSM scores no ``</s>``."""


register_kernels(OSMData, osm_transition, osm_end)
