"""A model's own feature modules (pbmt.base.feature_modules): named in pbmt.toml, run before moses.ini's feature
lines are read, in every reader of the ini; what goes wrong is one line naming pbmt.toml's line."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pbmt.base.config import MosesConfig
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.feature_modules import module_name
from pbmt.model.model import TranslationModel

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "repeats.py"


def _model(tiny_model_dir: Path, folder: Path, toml: str, module: str | None = None) -> Path:
    """The tiny model in ``folder`` with a RepeatedWords line, ``toml`` as its pbmt.toml and ``module`` (text of a
    feature module, default the docs' example) as repeats.py."""
    folder.mkdir(exist_ok=True)
    for name in ("phrase-table.gz", "reordering-table.gz"):
        shutil.copy(tiny_model_dir / name, folder / name)
    ini = (tiny_model_dir / "moses.ini").read_text()
    ini = ini.replace("Distortion\n", "Distortion\nRepeatedWords\n").replace("LM0= 0.5", "LM0= 0.5\nRepeats0= -1")
    (folder / "moses.ini").write_text(ini)
    (folder / "pbmt.toml").write_text(toml)
    (folder / "repeats.py").write_text(module if module is not None else EXAMPLE.read_text())
    return folder / "moses.ini"


def test_a_named_module_makes_its_feature_known_to_every_reader_of_the_ini(tiny_model_dir, tmp_path):
    ini = _model(tiny_model_dir, tmp_path / "m", '[features]\nmodules = ["repeats.py"]\n')
    config = MosesConfig.read(ini)
    assert config.feature_modules == ((tmp_path / "m" / "repeats.py").resolve(),)
    assert config.feature("Repeats0").type == "RepeatedWords" and config.weights["Repeats0"] == (-1.0,)
    model = TranslationModel.load(ini)
    feature = next(f for f in model.features if f.name == "Repeats0")
    assert type(feature).__module__ == module_name((tmp_path / "m" / "repeats.py").resolve())
    # a copy of the model elsewhere (a tuning run's folder) names the module where it is
    assert model.toml_tables(tmp_path / "elsewhere")["features"] == {"modules": [str(config.feature_modules[0])]}
    assert model.toml_tables(tmp_path / "m")["features"] == {"modules": ["repeats.py"]}


def test_a_process_that_reads_the_ini_alone_runs_the_module_first(tiny_model_dir, tmp_path):
    ini = _model(tiny_model_dir, tmp_path / "m", '[features]\nmodules = ["repeats.py"]\n')
    code = (f"from pbmt.base.config import read_weights; print(read_weights({str(ini)!r})['Repeats0'])")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "(-1.0,)"


def test_without_the_entry_the_unknown_name_says_where_user_features_are_named(tiny_model_dir, tmp_path):
    ini = _model(tiny_model_dir, tmp_path / "m", "")
    ini.write_text(ini.read_text().replace("RepeatedWords", "NoOnesRepeats"))  # a name no module registered here
    with pytest.raises(FormatError) as err:
        MosesConfig.read(ini)
    message = str(err.value)
    assert ":11:" in message and "'NoOnesRepeats'" in message and "[features] modules" in message
    assert "pbmt.toml" in message and "\n" not in message


@pytest.mark.parametrize("toml, module, expected", [
    ('[features]\nmodules = ["nope.py"]\n', None, r"pbmt.toml:2: \[features\] modules: 'nope.py': .*nope.py is not a file"),
    ('\n[features]\nmodules = "repeats.py"\n', None, r"pbmt.toml:3: \[features\] modules must be a list"),
    ('[features]\nmodule = ["repeats.py"]\n', None, r"pbmt.toml: unknown \[features\] keys \['module'\]"),
    ('[features]\nmodules = ["repeats.py"]\n', "import numpy\n\nx = numpy.nothing\n",
     r"pbmt.toml:2: \[features\] modules: 'repeats.py' failed to load: .*repeats.py:3: AttributeError: .*nothing"),
    ('[features]\nmodules = ["repeats.py"]\n', "def f(:\n",
     r"pbmt.toml:2: \[features\] modules: 'repeats.py' failed to load: .*repeats.py:1: SyntaxError"),
])
def test_a_missing_or_broken_module_is_one_line_naming_pbmt_toml(tiny_model_dir, tmp_path, toml, module, expected):
    ini = _model(tiny_model_dir, tmp_path / "m", toml, module)
    with pytest.raises(PbmtError, match=expected) as err:
        TranslationModel.load(ini)
    assert "\n" not in str(err.value)
    assert not [name for name in sys.modules if name.startswith("pbmt_user_") and "repeats" in name
                and getattr(sys.modules[name], "__file__", "").startswith(str(tmp_path))]


BAD_ARGUMENT = """from pbmt.base.config import FeatureType
from pbmt.model.features import FeatureFunction, register


@register
class Widths(FeatureFunction):
    moses_name = "Widths"
    syntax = FeatureType("Widths", 1)

    def __init__(self, spec, config, vocab):
        super().__init__(spec, config, vocab)
        self.width = int(spec.args["width"])
"""


def test_an_error_of_the_modules_feature_on_its_line_names_the_line_and_the_module(tiny_model_dir, tmp_path):
    ini = _model(tiny_model_dir, tmp_path / "m", '[features]\nmodules = ["repeats.py"]\n', BAD_ARGUMENT)
    ini.write_text(ini.read_text().replace("RepeatedWords\n", "Widths width=six\n").replace("Repeats0=", "Widths0="))
    with pytest.raises(FormatError, match=r"moses.ini:11: Widths: .*repeats.py:12: ValueError: invalid literal "
                                          r"for int\(\) with base 10: 'six'") as err:
        TranslationModel.load(ini)
    assert "\n" not in str(err.value)


def _broken_model(tiny_model_dir: Path, folder: Path, method: str) -> Path:
    """The tiny model in ``folder`` with a feature ``Broken`` of its own module whose ``method`` (its signature)
    divides by zero on the module's line 15."""
    module = BAD_ARGUMENT.replace("Widths", "Broken").replace("self.width = int(spec.args[\"width\"])", "pass")
    module += f"\n    def {method}:\n        return 1 / 0\n"
    ini = _model(tiny_model_dir, folder, '[features]\nmodules = ["repeats.py"]\n', module)
    ini.write_text(ini.read_text().replace("RepeatedWords\n", "Broken\n").replace("Repeats0=", "Broken0="))
    return ini


def test_an_error_raised_in_the_modules_code_is_said_as_the_modules_not_as_a_bug_in_pbmt(tiny_model_dir, tmp_path):
    ini = _broken_model(tiny_model_dir, tmp_path / "m", "local(self, table)")
    (tmp_path / "in.txt").write_text("a b\n")
    run = subprocess.run([sys.executable, "-m", "pbmt", "translate", "-f", str(ini), "-i", str(tmp_path / "in.txt"),
                          "-o", str(tmp_path / "out.txt")], capture_output=True, text=True)
    assert run.returncode == 1 and "internal error" not in run.stderr, run.stderr[-2000:]
    last = run.stderr.splitlines()[-1]
    assert last.startswith("pbmt translate: error in a feature module of the model") and \
        last.endswith("repeats.py:15: ZeroDivisionError: division by zero"), last
    assert "Traceback" in run.stderr  # the module's author sees where


def test_the_guides_feature_decodes_as_exhaustive_enumeration(tiny_model_dir, feature_folder):
    """docs/examples/repeats.py on the tiny model: for every derivation of three sentences its column equals the
    repeats counted in the derivation's words, and stack decoding without pruning gives every derivation's
    score, best first: its state (the last two words) is all the past its score needs. (The model's folder is
    at the same path in every run, so the search compiled for the feature is compiled once per clone.)"""
    import dataclasses

    import numpy as np
    from enumeration import all_derivations

    from pbmt.model.model import SearchSettings
    from pbmt.search.decoder import decode
    from pbmt.search.derivation import score_derivation
    from pbmt.search.options import TranslationOptions

    ini = _model(tiny_model_dir, feature_folder("feature-modules"), '[features]\nmodules = ["repeats.py"]\n')
    model = dataclasses.replace(TranslationModel.load(ini), settings=SearchSettings(
        stack_size=10**6, beam_threshold=0.0, search="stack", distortion_limit=2))
    column = model.layout.columns("Repeats0").start
    fired = 0
    for sentence in ("a b c", "b b c d", "e d c b a"):
        options = TranslationOptions.build(model, model.vocab.ids(sentence.split()))
        everything = all_derivations(options, 2)
        for d in everything:
            words = d.target_words(options).tolist()
            repeats = sum(w in words[max(0, i - 2):i] for i, w in enumerate(words))
            assert score_derivation(d, options, model)[column] == -repeats
            fired += repeats > 0
        scores = sorted((score_derivation(d, options, model) @ model.weights for d in everything), reverse=True)
        found = decode(model, options, n_best=len(everything) + 5)
        np.testing.assert_allclose([e.score for e in found], scores, atol=1e-9)
    assert fired > 10


def test_sentence_data_named_as_another_features_is_refused():
    """numba names compiled code after its types' names: a second feature's data of the same name would share
    the first's compiled kernels."""
    from collections import namedtuple

    from pbmt.model.features import register_kernels

    clash = namedtuple("LMData", ["x"])
    with pytest.raises(TypeError, match=r"LMData: the sentence data of another feature \(pbmt\.model\.\S+\) has "
                                        "the same name"):
        register_kernels(clash, None, None)


def test_an_error_the_modules_code_raises_on_a_dask_worker_is_the_line_said_in_process(tiny_model_dir, tmp_path):
    """unknown_local runs per sentence, where the sentence is decoded: on a worker process with --workers 2."""
    ini = _broken_model(tiny_model_dir, tmp_path / "m", "unknown_local(self, n_words, letterless)")
    (tmp_path / "in.txt").write_text("a zzz\nb yyy\n")
    errors = {}
    for workers in ("1", "2"):
        run = subprocess.run([sys.executable, "-m", "pbmt", "translate", "-f", str(ini), "-i", str(tmp_path / "in.txt"),
                              "-o", str(tmp_path / "out.txt"), "--workers", workers], capture_output=True, text=True,
                             env={**os.environ, "PBMT_CLUSTER_MIN_ITEMS": "1"})
        assert run.returncode == 1 and "internal error" not in run.stderr, run.stderr[-3000:]
        errors[workers] = run.stderr
    assert "distributed" in errors["2"] and "distributed" not in errors["1"]  # the worker raised it
    last = errors["1"].splitlines()[-1]
    assert last.startswith("pbmt translate: error in a feature module of the model") and \
        last.endswith("repeats.py:15: ZeroDivisionError: division by zero"), last
    assert errors["2"].splitlines()[-1] == last
