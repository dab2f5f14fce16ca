"""Numba kernels composing the model's transition features, shared by every search.

``Transitions`` is the one form in which every search reads the scores of a
block that depend on its predecessor: one ``Slot`` per feature of the model
that scores a block in context (``pbmt.model.features.FeatureFunction``), the
stateful ones (each owns a slice of the searches' state row) apart from the
stateless ones (which read the previous block). ``transition`` composes the
features' own kernels (``pbmt.model._feature_kernels``) in two forms chosen
by its ``weighted`` flag, a constant of each caller that numba folds away:
weighted (the searches' extension scores, ``extension_score``) or added per
feature column to a row (``score_dense`` for ``score_derivation`` and n-best
lists, the sampler's deltas, lattice edges). A feature writes its values to
its own columns in both forms; the weighted form gives it a zeroed scratch
row, takes the dot product with its weights and zeroes the row again.
``score_dense`` recomputes the dense features of a derivation from scratch,
the reference the others are tested against.
"""

import operator
from collections import namedtuple

import numpy as np
from numba import njit, types
from numba.core.registry import cpu_target
from numba.extending import overload

from pbmt.model.features import feature_end, feature_transition

Slot = namedtuple("Slot", [
    "data",  # the feature's sentence data (a named tuple its kernels are registered for)
    "col",  # int: its first column in the rows the per-column form writes
    "n_cols",  # int: its number of columns
    "state_lo", "state_hi",  # int: its slice of the state row (equal: stateless)
])
"""One transition feature of a sentence, as the kernels call it."""

Transitions = namedtuple("Transitions", [
    "stateful",  # tuple of Slot: the features that keep state (never empty: a model has an LM)
    "stateless",  # tuple of Slot: the features that read the previous block (a feature of no columns when none)
    "begin",  # int64[width]: the state row at the sentence start
    "weights",  # float64[>= n_cols]: the weights the weighted form multiplies each column by
    "scratch",  # float64[widest feature]: zeroed; the weighted form's row (each search builds its own)
    "stateful_cols",  # int64[k]: the columns of the stateful features, in order
    "no_state",  # int64[0]: the state stateless features are given
    "key_option",  # bool: a feature reads the previous block's option, so recombination keys on it
])
"""Every score of a block that depends on its predecessor: the searches' one form of the model's transition
features, with the weights and the columns they have in the feature vector."""


@njit(cache=True, inline="always")
def _row(scratch, slot, weighted, out):
    """The feature's columns: the scratch row (weighted form) or its part of ``out``."""
    if weighted:
        return scratch[:slot.n_cols]
    return out[slot.col:slot.col + slot.n_cols]


@njit(cache=True, inline="always")
def _weigh(weights, slot, weighted, row):
    """The weighted form's part of a feature's row (zeroed again); 0 in the per-column form."""
    total = 0.0
    if weighted:
        for k in range(slot.n_cols):
            total += weights[slot.col + k] * row[k]
            row[k] = 0.0
    return total


# A feature's call is a function of its own, compiled once per feature type and shared by every search: numba
# inlines none into a loop over a tuple of features of several types, and its arguments are given as int64 and a
# run-time ``weighted`` so that no caller's literal or narrower integer compiles it again. It takes the two
# arrays of ``Transitions`` it reads (the weights and the scratch row), not the whole named tuple: numba passes a
# tuple as every one of its fields, so a call given ``tr`` would copy every feature's arrays, and the function
# would compile once per combination of the model's features rather than once per feature type. Without
# reference counting, as its views of the state and the rows need none; called by kernels only, so without the
# wrappers a call from Python needs.
@njit(cache=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _step(weights, scratch, slot, state, new_state, prev_start, prev_end, prev_option, o, start, end, weighted,
          out):
    row = _row(scratch, slot, weighted, out)
    feature_transition(slot.data, state, new_state, prev_start, prev_end, prev_option, start, end, o, row)
    return _weigh(weights, slot, weighted, row)


@njit(cache=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _end(weights, scratch, slot, state, last_option, weighted, out):
    row = _row(scratch, slot, weighted, out)
    feature_end(slot.data, state, last_option, row)
    return _weigh(weights, slot, weighted, row)


def _unrolled(params: str, n: int, term: str):
    """A function of ``params`` (the first ``total``) returning ``total`` plus ``term`` for k = 0, ..., n - 1 in
    turn, in straight-line code: a loop over the k-th feature of a tuple of features of several types,
    unrolled. The sum is the loop's, term by term in order."""
    source = (f"def unrolled({params}):\n" + "".join(f"    total += {term.format(k=k)}\n" for k in range(n))
              + "    return total\n")
    scope = {"__name__": __name__, "_step": _step, "_end": _end}
    exec(source, scope)
    return scope["unrolled"]


def _count(tr, field: str) -> int:
    """The number of features in field ``stateful`` or ``stateless`` of ``Transitions`` type ``tr``."""
    return len(tr.types[tr.fields.index(field)])


# The loops over a model's features, one per model when a search is typed: the slots are a tuple of named tuples
# of several types, one per feature type. Numba's ``literal_unroll`` would retype the whole calling function once
# per such loop, and these four sit in every search's hottest kernel; unrolled here, each is straight-line code
# typed once. Numba only.
def _stateful_steps(total, tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, weighted,
                    out):
    raise NotImplementedError("called from numba kernels only")


def _stateful_ends(total, tr, new_states, g, last, weighted, out):
    raise NotImplementedError("called from numba kernels only")


def _stateless_steps(total, tr, prev_start, prev_end, prev_option, o, start, end, weighted, out):
    raise NotImplementedError("called from numba kernels only")


def _stateless_ends(total, tr, last_option, weighted, out):
    raise NotImplementedError("called from numba kernels only")


@overload(_stateful_steps, inline="always")
def _stateful_steps_unrolled(total, tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end,
                             weighted, out):
    return _unrolled("total, tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, "
                     "weighted, out", _count(tr, "stateful"),
                     "_step(tr.weights, tr.scratch, tr.stateful[{k}], "
                     "states[h, tr.stateful[{k}].state_lo:tr.stateful[{k}].state_hi], "
                     "new_states[g, tr.stateful[{k}].state_lo:tr.stateful[{k}].state_hi], prev_start, prev_end, "
                     "prev_option, o, start, end, weighted, out)")


@overload(_stateful_ends, inline="always")
def _stateful_ends_unrolled(total, tr, new_states, g, last, weighted, out):
    return _unrolled("total, tr, new_states, g, last, weighted, out", _count(tr, "stateful"),
                     "_end(tr.weights, tr.scratch, tr.stateful[{k}], "
                     "new_states[g, tr.stateful[{k}].state_lo:tr.stateful[{k}].state_hi], last, weighted, out)")


@overload(_stateless_steps, inline="always")
def _stateless_steps_unrolled(total, tr, prev_start, prev_end, prev_option, o, start, end, weighted, out):
    return _unrolled("total, tr, prev_start, prev_end, prev_option, o, start, end, weighted, out",
                     _count(tr, "stateless"),
                     "_step(tr.weights, tr.scratch, tr.stateless[{k}], tr.no_state, tr.no_state, prev_start, "
                     "prev_end, prev_option, o, start, end, weighted, out)")


@overload(_stateless_ends, inline="always")
def _stateless_ends_unrolled(total, tr, last_option, weighted, out):
    return _unrolled("total, tr, last_option, weighted, out", _count(tr, "stateless"),
                     "_end(tr.weights, tr.scratch, tr.stateless[{k}], tr.no_state, last_option, weighted, out)")


@njit(cache=True, inline="always")
def stateful_score(tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, eos, weighted,
                   out):
    """The stateful features of option ``o`` over [start, end) (o < 0: no block, the state copied) in state row
    ``states[h]``, the state after it to ``new_states[g]`` (which may be the same row); then the sentence end if
    ``eos`` (after ``o``, or ``prev_option`` when there is no block). Weighted (returned) or per column (added
    to ``out``)."""
    total = 0.0
    if o >= 0:
        total = _stateful_steps(total, tr, states, h, new_states, g, np.int64(prev_start), np.int64(prev_end),
                                np.int64(prev_option), np.int64(o), np.int64(start), np.int64(end), np.bool_(weighted),
                                out)
    else:
        for m in range(states.shape[1]):
            new_states[g, m] = states[h, m]
    if eos:
        last = o if o >= 0 else prev_option
        total = _stateful_ends(total, tr, new_states, g, np.int64(last), np.bool_(weighted), out)
    return total


@njit(cache=True, inline="always")
def jump_score(tr, prev_start, prev_end, prev_option, start, end, o, weighted, out):
    """The stateless features of block [start, end) with option ``o`` after block [prev_start, prev_end) with
    ``prev_option`` ([0, 0) and -1 at the sentence start)."""
    return _stateless_steps(0.0, tr, np.int64(prev_start), np.int64(prev_end), np.int64(prev_option), np.int64(o),
                            np.int64(start), np.int64(end), np.bool_(weighted), out)


@njit(cache=True, inline="always")
def end_score(tr, last_option, weighted, out):
    """The stateless features of the sentence end after ``last_option`` (-1: an empty derivation)."""
    return _stateless_ends(0.0, tr, np.int64(last_option), np.bool_(weighted), out)


@njit(cache=True, inline="always")
def transition(tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, complete, weighted,
               out):
    """Every transition feature of option ``o`` over [start, end) after block [prev_start, prev_end) with
    ``prev_option`` in state row ``states[h]`` (its new state to ``new_states[g]``); ``complete``: the block
    ends the sentence (every feature's end score). Weighted (returns the weighted sum, natural log) or per
    column (adds each value to ``out``, float64[n_cols], and returns 0)."""
    prev_start, prev_end, prev_option = np.int64(prev_start), np.int64(prev_end), np.int64(prev_option)
    o, start, end, weighted = np.int64(o), np.int64(start), np.int64(end), np.bool_(weighted)
    total = jump_score(tr, prev_start, prev_end, prev_option, start, end, o, weighted, out)
    total += stateful_score(tr, states, np.int64(h), new_states, np.int64(g), prev_start, prev_end, prev_option, o,
                            start, end, np.bool_(complete), weighted, out)
    if complete:
        total += end_score(tr, o, weighted, out)
    return total


@njit(cache=True, inline="always")
def extension_score(tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, complete):
    """``transition``'s weighted form: the searches' score of extending hypothesis ``h`` by option ``o``."""
    return transition(tr, states, h, new_states, g, prev_start, prev_end, prev_option, o, start, end, complete, True,
                      tr.weights)


def end_parts(tr, new_states):
    """The feature kernels ``extension_score`` calls at the sentence end, each with the numba types it calls it
    with when ``tr`` and the state rows written (``new_states``, a 2-d array) have these numba types: (kernel,
    argument types) pairs, to compile apart from the search kernel (``_cube_kernels.cube_parts``)."""
    field = dict(zip(tr.fields, tr.types))
    context = cpu_target.typing_context
    context.refresh()
    row = context.resolve_function_type(operator.getitem, (new_states, types.Tuple((types.int64, types.slice2_type))),
                                        {}).return_type
    head = (field["weights"], field["scratch"])
    tail = (types.int64, types.boolean, field["weights"])
    return ([(_end, (*head, slot, row, *tail)) for slot in field["stateful"]]
            + [(_end, (*head, slot, field["no_state"], *tail)) for slot in field["stateless"]])


@njit(cache=True, nogil=True)
def score_dense(tr, d_start, d_end, d_option, local, states, out, complete=True):
    """Add the dense features of one derivation to ``out`` (float64[n_features]): ``transition``'s per-column
    form along its blocks from the sentence start, and the sentence end if ``complete``.

    d_*: int32[k], blocks in target order. local: float64[n_opt, n_features] option-local values; states:
    int64[1, width] scratch. Natural logs.
    """
    k = d_start.shape[0]
    states[0] = tr.begin
    prev_start, prev_end, prev_option = 0, 0, -1
    for b in range(k):
        o = d_option[b]
        out += local[o]
        transition(tr, states, 0, states, 0, prev_start, prev_end, prev_option, o, d_start[b], d_end[b],
                   complete and b == k - 1, False, out)
        prev_start, prev_end, prev_option = d_start[b], d_end[b], o
    if k == 0 and complete:
        zero = np.int64(0)
        stateful_score(tr, states, zero, states, zero, zero, zero, np.int64(-1), np.int64(-1), zero, zero,
                       np.bool_(True), np.bool_(False), out)


@njit(cache=True, nogil=True)
def score_dense_paths(tr, path_offsets, path_options, opt_start, opt_end, local, out):
    """``score_dense`` of many derivations of one sentence: derivation ``i`` uses the options
    ``path_options[path_offsets[i]:path_offsets[i + 1]]`` in target order; its features go to ``out[i]``
    (float64[k, n_features], zeroed first)."""
    states = np.empty((1, tr.begin.shape[0]), dtype=np.int64)
    for i in range(path_offsets.shape[0] - 1):
        chosen = path_options[path_offsets[i]:path_offsets[i + 1]]
        out[i] = 0.0
        score_dense(tr, opt_start[chosen], opt_end[chosen], chosen, local, states, out[i])
