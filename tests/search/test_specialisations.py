"""Numba compiles a kernel once for each distinct tuple of argument types, and a literal argument (a constant
passed from another kernel) is a type of its own: the LM and the searches give their kernels the same types
whatever the caller (int64 positions and words, read-only arrays), so that a cold first run compiles each
kernel once (docs/decoding.md, "The first run")."""

import dataclasses

import numpy as np
import pytest
from numba import types
from numba.core.registry import CPUDispatcher

from pbmt.model import _lm_kernels
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search import _cube_kernels, _decoder_kernels, _sampler_kernels, _scoring_kernels
from pbmt.search.decoder import decode
from pbmt.search.options import TranslationOptions
from pbmt.search.sampler import Sampler, gloss

SEARCH_MODULES = (_cube_kernels, _decoder_kernels, _scoring_kernels, _lm_kernels)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def _kernels(module):
    return [(name, kernel) for name, kernel in vars(module).items()
            if isinstance(kernel, CPUDispatcher) and kernel.py_func.__module__ == module.__name__]


def test_search_kernels_compile_no_literal_and_the_lm_one_word_type(tiny):
    for search in ("cube", "stack"):
        model = dataclasses.replace(tiny, settings=dataclasses.replace(tiny.settings, search=search))
        for sentence in ("a b c", "e d c b a"):
            options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
            assert decode(model, options, n_best=1)
            assert decode(model, options, n_best=5)
    lm = next(feature.lm for feature in tiny.features if hasattr(feature, "lm"))
    words = np.array([3, 4, 5], dtype=np.int32)  # writeable, as a caller's own arrays are
    lm.score_sentences(np.array([0, 2, 3]), words)
    lm.score(lm.begin_state, 4)

    for module in SEARCH_MODULES:
        for name, kernel in _kernels(module):
            for signature in kernel.signatures:
                literal = [str(t) for t in signature if isinstance(t, types.Literal)]
                assert not literal, f"{module.__name__}.{name} compiled for the literal {literal}"
    for signature in _lm_kernels.score_word.signatures:
        assert signature[1:] == (types.int64, types.int64), signature
    for signature in _lm_kernels.score_batch.signatures:
        assert not any(t.mutable for t in signature[1:3]), signature


def test_sampler_kernels_take_int64_positions_whatever_the_caller(tiny):
    """Each sampler kernel compiles once per feature set: no literal (a constant position or counter) and no
    int32 (a position read from a chain's arrays) argument."""
    for sentence in ("a b c", "e d c b a"):
        options = TranslationOptions.build(tiny, tiny.vocab.ids(sentence.split()))
        sampler = Sampler(tiny, options)
        assert sampler.run(sampler.start(gloss(options)), np.random.default_rng(0), 200).samples.size

    for name, kernel in _kernels(_sampler_kernels):
        for signature in kernel.signatures:
            odd = [str(t) for t in signature if isinstance(t, types.Literal)
                   or (isinstance(t, types.Integer) and t != types.int64)]
            assert not odd, f"{_sampler_kernels.__name__}.{name} compiled for {odd}"
