"""The feature contract (pbmt.model.features): a stateful feature written outside pbmt, registered under its own
name and named in moses.ini, is searched, rescored from scratch and enumerated exactly like the built-in ones;
moses.ini lines the registry cannot make are one-line errors naming the line.

The searches compiled for the test's feature are cached apart from pbmt's own kernels (pbmt.model._apart_cache),
beside this file."""

import dataclasses
from collections import namedtuple

import numpy as np
import pytest
from numba import njit

from pbmt.base.config import FeatureType
from pbmt.base.errors import FormatError
from pbmt.model.features import FEATURES, FeatureFunction, register, register_kernels
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import score_derivation
from pbmt.search.options import TranslationOptions

from enumeration import all_derivations

RepeatData = namedtuple("RepeatData", ["tgt_offsets", "tgt_words"])


@njit(cache=True)
def _repeat_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    last = state[0]
    for k in range(data.tgt_offsets[option], data.tgt_offsets[option + 1]):
        word = data.tgt_words[k]
        if word == last:
            out[0] -= 1.0
        last = word
    new_state[0] = last


@njit(cache=True)
def _repeat_end(data, state, last_option, out):
    if state[0] % 2 == 0:
        out[1] -= 1.0


register_kernels(RepeatData, _repeat_transition, _repeat_end)


@register
class RepeatedWords(FeatureFunction):
    """Test feature: minus the number of target words equal to the word before them; minus 1 when the last
    word's id is even. State: the last target word (-1 at the start)."""

    moses_name = "TestRepeatedWords"
    syntax = FeatureType("Repeats", 2)
    state_width = 1
    scores_transitions = True

    def begin_state(self) -> np.ndarray:
        return np.array([-1], dtype=np.int64)

    def sentence_data(self, options, cache) -> RepeatData:
        return RepeatData(options.tgt_offsets, options.tgt_words)


def _expected(words) -> tuple[float, float]:
    repeats = sum(a == b for a, b in zip(words, words[1:]))
    return -float(repeats), -1.0 if len(words) and words[-1] % 2 == 0 else 0.0


def test_registered_feature_decodes_as_enumeration_and_rescoring(tiny_model_dir):
    ini = tiny_model_dir / "repeats.ini"
    text = (tiny_model_dir / "moses.ini").read_text()
    text = text.replace("Distortion\n", "Distortion\nTestRepeatedWords\n").replace("LM0= 0.5", "LM0= 0.5\nRepeats0= 0.9 0.4")
    ini.write_text(text)
    loaded = TranslationModel.load(ini)
    for sentence in ("a b c", "b b c d", "e d c b a"):
        _check(loaded, sentence)


def _check(loaded, sentence):
    model = dataclasses.replace(loaded, settings=SearchSettings(stack_size=10**6, beam_threshold=0.0,
                                                                search="stack", distortion_limit=2))
    assert "Repeats0" in model.layout.names and model.layout.columns("Repeats0") == slice(14, 16)
    options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
    everything = all_derivations(options, 2)
    columns = model.layout.columns("Repeats0")
    for d in everything:
        assert tuple(score_derivation(d, options, model)[columns]) == _expected(d.target_words(options).tolist())
    scores = sorted((score_derivation(d, options, model) @ model.weights for d in everything), reverse=True)
    every = decode(model, options, n_best=len(everything) + 5)
    np.testing.assert_allclose([e.score for e in every], scores, atol=1e-9)
    for e in every[:5]:
        assert abs(score_derivation(e.derivation, options, model) @ model.weights - e.score) <= 1e-9


def test_unknown_feature_name_names_the_line_and_the_registry(tiny_model_dir):
    ini = tiny_model_dir / "unknown.ini"
    ini.write_text((tiny_model_dir / "moses.ini").read_text().replace("Distortion\n", "Distortion\nSomeFeature\n"))
    with pytest.raises(FormatError) as err:
        TranslationModel.load(ini)
    message = str(err.value)
    assert ":11:" in message and "SomeFeature" in message and "KENLM" in message and "\n" not in message


def test_wrong_number_of_weights_names_the_line(tiny_model_dir):
    ini = tiny_model_dir / "weights.ini"
    ini.write_text((tiny_model_dir / "moses.ini").read_text().replace("Distortion0= 0.4", "Distortion0= 0.4 0.1"))
    with pytest.raises(FormatError, match=r":\d+:.*Distortion0 has 1 scores but 2 weights"):
        TranslationModel.load(ini)


def test_missing_file_names_the_line(tiny_model_dir):
    ini = tiny_model_dir / "missing.ini"
    ini.write_text((tiny_model_dir / "moses.ini").read_text().replace("path=reordering-table.gz", "path=nope.gz"))
    with pytest.raises(FormatError, match=r":9:.*nope.gz"):
        TranslationModel.load(ini)


def test_every_moses_feature_is_registered():
    assert {"KENLM", "Distortion", "LexicalReordering", "PhrasePenalty", "WordPenalty", "UnknownWordPenalty",
            "PhraseDictionaryMemory"} <= set(FEATURES)
    assert all(issubclass(cls, FeatureFunction) for cls in FEATURES.values())
