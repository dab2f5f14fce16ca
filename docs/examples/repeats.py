"""A search feature of one's own, outside pbmt: minus the number of target words that repeat a word just before
them ("the the", "of the of"), as pbmt's decoder, n-best lists, tuners and explain score it.

docs/writing-a-feature.md walks through this file. A model uses it when its pbmt.toml says
``[features] modules = ["repeats.py"]`` and its moses.ini has a ``RepeatedWords`` line and a weight.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from pbmt.base.config import FeatureType
from pbmt.model.features import FeatureFunction, register, register_kernels

WINDOW = 2  # a word repeats when it equals one of the WINDOW target words before it

# What the kernels read of one sentence: its translation options' target words, as a CSR (option o's words are
# tgt_words[tgt_offsets[o]:tgt_offsets[o + 1]], global word ids).
RepeatWindow = namedtuple("RepeatWindow", ["tgt_offsets", "tgt_words"])


@njit(cache=True)
def repeat_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """Option ``option`` appends its target words: each equal to one of the WINDOW words before it (the state
    holds the last WINDOW, oldest first, -1 where there is none) takes 1 from the column; the new state holds
    the last WINDOW words after it."""
    a, b = state[0], state[1]  # read before writing: new_state may be state itself
    for k in range(data.tgt_offsets[option], data.tgt_offsets[option + 1]):
        word = data.tgt_words[k]
        if word == a or word == b:
            out[0] -= 1.0
        a, b = b, word
    new_state[0], new_state[1] = a, b


@njit(cache=True)
def repeat_end(data, state, last_option, out):
    """Nothing more at the sentence end."""


register_kernels(RepeatWindow, repeat_transition, repeat_end)


@register
class RepeatedWords(FeatureFunction):
    """``RepeatedWords`` in moses.ini: one column, named ``Repeats0`` unless the line says ``name=``."""

    moses_name = "RepeatedWords"
    syntax = FeatureType("Repeats", 1)  # default name and number of columns of its moses.ini line
    state_width = WINDOW  # int64 values of state per hypothesis: the last WINDOW target words
    scores_transitions = True

    def begin_state(self) -> np.ndarray:
        return np.full(WINDOW, -1, dtype=np.int64)

    def sentence_data(self, options, cache) -> RepeatWindow:
        return RepeatWindow(options.tgt_offsets, options.tgt_words)
