"""A feature of one's own written wrongly (docs/writing-a-feature.md's contract broken one way at a time) is a
one-line error naming the feature's file, never pbmt's "internal error" nor a silent wrong result: a kernel
that is not @njit or takes other parameters, sentence data that is not a registered named tuple, a kernel
numba cannot compile, a begin_state of another width, option-local scores of another shape, a name of one of
pbmt's own features."""

import itertools
import re
import shutil
from collections import namedtuple
from pathlib import Path

import pytest
from numba import njit

from pbmt.base.config import FeatureType
from pbmt.base.errors import FormatError, PbmtError
from pbmt.model.features import FEATURES, FeatureFunction, register, register_kernels
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.options import TranslationOptions

_NUMBERS = itertools.count()
EXAMPLE = (Path(__file__).resolve().parents[2] / "docs" / "examples" / "repeats.py").read_text()


def _model(tiny_model_dir: Path, folder: Path, module: str) -> Path:
    """The tiny model in ``folder`` with the docs' RepeatedWords line, its module ``module`` (text), whose
    sentence data's class is renamed RepeatWindowN, a name no other module of this process gives its own."""
    module = module.replace("RepeatWindow", f"RepeatWindow{next(_NUMBERS)}")
    folder.mkdir()
    for name in ("phrase-table.gz", "reordering-table.gz"):
        shutil.copy(tiny_model_dir / name, folder / name)
    ini = (tiny_model_dir / "moses.ini").read_text()
    ini = ini.replace("Distortion\n", "Distortion\nRepeatedWords\n").replace("LM0= 0.5", "LM0= 0.5\nRepeats0= -1")
    (folder / "moses.ini").write_text(ini)
    (folder / "pbmt.toml").write_text('[features]\nmodules = ["repeats.py"]\n')
    (folder / "repeats.py").write_text(module)
    return folder / "moses.ini"


def _changed(old: str, new: str) -> str:
    assert old in EXAMPLE
    return EXAMPLE.replace(old, new)


def _line(module: str, text: str) -> int:
    return next(n for n, line in enumerate(module.splitlines(), 1) if text in line)


Data = namedtuple("Data", ["x"])


@njit
def _transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    out[0] += 1.0


@njit
def _end(data, state, last_option, out):
    out[0] += 1.0


def test_register_kernels_refuses_what_numba_would_refuse_deep_in_a_search():
    def plain(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
        pass

    @njit
    def short_end(data, state, out):
        pass

    with pytest.raises(TypeError, match=r"register_kernels: plain is not an @njit function"):
        register_kernels(Data, plain, _end)
    with pytest.raises(TypeError, match=r"register_kernels: short_end\(data, state, out\) takes 3 parameters; a "
                                        r"feature's kernel takes 4: \(data, state, last_option, out\)"):
        register_kernels(Data, _transition, short_end)
    with pytest.raises(TypeError, match=r"must be a named tuple class .*got <class 'tuple'>"):
        register_kernels(tuple, _transition, _end)


def test_a_feature_of_ones_own_cannot_take_the_name_of_one_of_pbmts():
    builtin = FEATURES["Distortion"]

    class Mine(FeatureFunction):
        moses_name = "Distortion"
        syntax = FeatureType("Distortion", 1)

    with pytest.raises(ValueError, match=r"Mine: 'Distortion' is the name of one of pbmt's own features"):
        register(Mine)
    assert FEATURES["Distortion"] is builtin


@pytest.mark.parametrize("old, new, expected", [
    ("np.full(WINDOW, -1, dtype=np.int64)", "np.full(3, -1, dtype=np.int64)",
     r"begin_state\(\) returned int64\[3\], not int64\[2\]"),
    ("np.full(WINDOW, -1, dtype=np.int64)", "np.full(WINDOW, -1.5)", r"begin_state\(\) returned float64\[2\]"),
    ("    def sentence_data(self, options, cache) -> RepeatWindow:\n", "    def sentence_date(self, options, cache):\n",
     r"scores_transitions is True but the class has no sentence_data"),
    ("state_width = WINDOW", "state_width = -2", r"state_width is -2, not a count"),
    ("    scores_transitions = True\n", "    scores_transitions = True\n\n    def __init__(self, spec, config, vocab):\n"
     "        self.vocab = vocab\n", r"its __init__ does not call super\(\).__init__\(spec, config, vocab\)"),
])
def test_a_contract_the_searches_cannot_run_is_the_features_line(tiny_model_dir, tmp_path, old, new, expected):
    """A begin_state wider than state_width made the next feature's state read the wrong values, silently; an
    __init__ without super().__init__ was an AttributeError in pbmt, 'internal error'."""
    module = _changed(old, new)
    ini = _model(tiny_model_dir, tmp_path / "m", module)
    with pytest.raises(FormatError) as err:
        TranslationModel.load(ini)
    message = str(err.value)
    assert message.startswith(f"{ini}:11: RepeatedWords: {tmp_path / 'm' / 'repeats.py'}:"
                              f"{_line(module, '@register')}: ")
    assert "\n" not in message and re.search(expected, message), message


def test_a_module_that_registers_no_feature_of_the_lines_name_is_said_so(tiny_model_dir, tmp_path):
    """The hint said to name the module in pbmt.toml, which named it already."""
    ini = _model(tiny_model_dir, tmp_path / "m", _changed("@register\n", "").replace("RepeatedWords", "Unregistered"))
    ini.write_text(ini.read_text().replace("RepeatedWords", "Unregistered"))  # a name no test registers
    with pytest.raises(FormatError, match=r"moses.ini:11: unsupported feature 'Unregistered'; .* \(the pbmt.toml's "
                                          r"\[features\] modules \(repeats.py\) register none of that name: a "
                                          r"FeatureFunction class of theirs with moses_name = 'Unregistered' and "
                                          r"@register\)$"):
        TranslationModel.load(ini)


@pytest.mark.parametrize("values, expected", [
    ("np.zeros(table.n_candidates)", r"local returned float64\[(\d+)\], not float64\[\1, 1\]"),
    ("np.zeros((table.n_candidates, 2))", r"local returned float64\[(\d+), 2\], not float64\[\1, 1\]"),
    ("np.full((table.n_candidates, 1), np.nan)", r"local returned NaN values, not float64\[\d+, 1\]"),
])
def test_option_local_scores_of_another_shape_name_the_feature(tiny_model_dir, tmp_path, values, expected):
    module = EXAMPLE + f"\n    def local(self, table):\n        return {values}\n"
    ini = _model(tiny_model_dir, tmp_path / "m", module)
    with pytest.raises(PbmtError, match=r"^feature Repeats0 \(RepeatedWords, .*repeats.py:\d+\): " + expected):
        TranslationModel.load(ini)


@pytest.mark.parametrize("old, new, returned", [
    ("return RepeatWindow(options.tgt_offsets, options.tgt_words)", "return (options.tgt_offsets, options.tgt_words)",
     "tuple"),
    ("register_kernels(RepeatWindow, repeat_transition, repeat_end)\n", "", r"RepeatWindow\d+"),
])
def test_sentence_data_not_registered_is_named_before_numba_compiles(tiny_model_dir, tmp_path, old, new, returned):
    """An unregistered named tuple once reached numba: the searches compiled for it went into pbmt's own cache
    (a class not given to register_kernels is not cached apart), whose index then named the module's class,
    and every later run of pbmt without that module, on any model, failed to read it."""
    model = TranslationModel.load(_model(tiny_model_dir, tmp_path / "m", _changed(old, new)))
    options = TranslationOptions.build(model, model.vocab.ids("a b".split()))
    with pytest.raises(PbmtError, match=r"feature Repeats0 \(RepeatedWords, .*repeats.py:\d+\): sentence_data "
                                        rf"returned a {returned}, not an instance of a named tuple class given to "
                                        r"register_kernels"):
        decode(model, options)


def test_a_kernel_numba_cannot_compile_names_its_line_and_numbas_reason(tiny_model_dir, tmp_path):
    """Was 'internal error: this is a bug in pbmt' after 300 lines about pbmt's search kernels."""
    module = _changed("            out[0] -= 1.0\n", "            out[0] -= 1.0 + undefined_name\n")
    model = TranslationModel.load(_model(tiny_model_dir, tmp_path / "m", module))
    options = TranslationOptions.build(model, model.vocab.ids("a b".split()))
    with pytest.raises(PbmtError) as err:
        decode(model, options)
    where = f"{tmp_path / 'm' / 'repeats.py'}:{_line(module, 'def repeat_transition') - 1}"  # its @njit line
    assert re.fullmatch(re.escape(f"{where}: numba cannot compile repeat_transition for sentence data ") +
                        r"RepeatWindow\d+" + re.escape("(array(int64, 1d, C), array(int32, 1d, C)): NameError: name "
                                                       "'undefined_name' is not defined"), str(err.value)), err.value
