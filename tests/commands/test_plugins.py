"""--plugins FILE of pbmt tune, optimize and rescore (pbmt.commands.plugins): a tuner or a rescoring feature of
one's own, from a Python file outside pbmt, runs from the shell as it runs from Python."""

import ast
import re
import subprocess
import sys

import numpy as np
import pytest

from pbmt.base import feature_modules
from pbmt.base.config import MosesConfig
from pbmt.commands import plugins
from pbmt.commands.cli import main
from pbmt.features import KINDS
from pbmt.tune import registry
from pbmt.tune.pool import References, read_pool
from pbmt.tune.rescore import RescoringModel
from pbmt.tune.tuner import TuningData
from repo_data import REPO

EXAMPLE = REPO / "docs" / "examples" / "random_search.py"
FEATURE = '''from pbmt.features import register


@register("target-words", prefix="TargetWords")
def target_words(hypothesis):
    """The target words."""
    return [len(hypothesis.target)]
'''


@pytest.fixture(autouse=True)
def forgotten():
    """What a test's --plugins files add is forgotten after it: the registries are the process's."""
    added, adds, loaded, kinds = dict(registry._ADDED), dict(plugins._ADDS), dict(feature_modules._LOADED), dict(KINDS)
    yield
    for name in [n for n in sys.modules if n.startswith("pbmt_user_") and n not in (v[0] for v in loaded.values())]:
        del sys.modules[name]
    registry._ADDED.clear(), registry._ADDED.update(added)
    plugins._ADDS.clear(), plugins._ADDS.update(adds)
    feature_modules._LOADED.clear(), feature_modules._LOADED.update(loaded)
    KINDS.clear(), KINDS.update(kinds)


@pytest.fixture(scope="module")
def lists(tmp_path_factory):
    """Moses-format n-best lists of 6 sentences, 8 entries each, random words and features, and references."""
    rng = np.random.default_rng(3)
    folder = tmp_path_factory.mktemp("plugin-lists")
    words = "a b c d e f g h".split()
    lines, refs, sources = [], [], []
    for sentence in range(6):
        refs.append(" ".join(rng.choice(words, 5)))
        sources.append(" ".join(rng.choice(words, 4)))
        for _ in range(8):
            lm, tm, wp = rng.normal(-5, 2), rng.normal(-2, 1, 2), -rng.integers(3, 7)
            text = " ".join(rng.choice(words, -wp))
            lines.append(f"{sentence} ||| {text} ||| LM0= {lm:.4f} TranslationModel0= {tm[0]:.4f} {tm[1]:.4f} "
                         f"WordPenalty0= {wp} ||| {lm + tm.sum() + wp:.4f}")
    (folder / "nbest").write_text("\n".join(lines) + "\n")
    (folder / "refs").write_text("\n".join(refs) + "\n")
    (folder / "src").write_text("\n".join(sources) + "\n")
    return folder


def _example_class():
    namespace: dict = {}
    exec(EXAMPLE.read_text(), namespace)
    return namespace["RandomSearch"]


def test_the_guides_tuner_is_the_example_file():
    guide = (REPO / "docs" / "writing-a-tuner.md").read_text(encoding="utf-8")
    assert re.search(r"```python\n(.*?)```", guide, re.S).group(1) == EXAMPLE.read_text()


def test_the_example_tuner_uses_only_public_names_of_pbmt():
    """A plugin is written against the public contract: the example (the guide's code) imports no ``_name`` and
    reaches no ``._name``, and what it calls on the Tuner base is a method of it."""
    tree = ast.parse(EXAMPLE.read_text(encoding="utf-8"))
    private = [node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr.startswith("_")]
    private += [alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names if alias.name.startswith("_")]
    assert private == []
    called = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
              and node.func.value.id == "self"}
    assert called == {"checked_start"} and callable(getattr(_example_class(), "checked_start"))


def test_optimize_runs_a_plugins_tuner_with_its_options_as_python_does(lists, tmp_path, capsys):
    out = tmp_path / "weights"
    assert main(["optimize", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--plugins",
                 str(EXAMPLE), "--algorithm", "random-search", "--tries", "40", "--step", "0.5", "--seed", "9",
                 "-o", str(out)]) == 0
    written = [float(v) for line in out.read_text().splitlines()[1:] for v in line.split("= ")[1].split()]
    pool = read_pool(lists / "nbest", References.read(lists / "refs"))
    tuner = _example_class()(tries=40, step=0.5).fit(TuningData(pool=pool), np.zeros(4), np.random.default_rng(9))
    assert written == pytest.approx(tuner.weights_, abs=1e-8) and np.any(tuner.weights_ != 0)
    assert "BLEU of its 1-best" in capsys.readouterr().err


def test_a_plugins_tuner_named_without_the_plugin_points_to_plugins(lists, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["optimize", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--algorithm",
              "random-search"])
    assert exit_.value.code == 2
    assert "a tuner of your own: give the file that defines it with --plugins" in capsys.readouterr().err


def test_help_lists_a_plugins_tuner_and_its_options(capsys):
    with pytest.raises(SystemExit):
        main(["tune", "--plugins", str(EXAMPLE), "--algorithm", "random-search", "--help"])
    text = capsys.readouterr().out
    assert "random search:" in text and "--tries N" in text and "--iterations N" in text and "--restarts" not in text


def test_rescore_trains_and_applies_with_a_plugins_feature_and_tuner(lists, tmp_path, capsys):
    (tmp_path / "words.py").write_text(FEATURE)
    weights = tmp_path / "weights"
    argv = ["rescore", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--src", str(lists / "src")]
    assert main([*argv, "--train", "--out", str(weights), "--plugins", str(tmp_path / "words.py"), str(EXAMPLE),
                 "--feature", "target-words", "--algorithm", "random-search", "--tries", "30"]) == 0
    model = RescoringModel.read(weights)
    assert model.algorithm == "random-search"
    assert model.parameters == {"tries": 30, "step": 0.1}
    capsys.readouterr()
    assert main([*argv, "--weights", str(weights), "--plugins", str(tmp_path / "words.py")]) == 0
    best = capsys.readouterr().out.splitlines()
    # the 1-best of each list under the weights, the rescoring features counted from scratch
    entries = [line.split(" ||| ") for line in (lists / "nbest").read_text().splitlines()]
    sources = (lists / "src").read_text().splitlines()
    assert model.layout.names[-2:] == ("LengthRatio0", "TargetWords0")  # --src adds the length ratio
    expected = []
    for sentence in range(6):
        own = [e for e in entries if int(e[0]) == sentence]
        scores = []
        for e in own:
            values = np.zeros(model.layout.size)
            for name, numbers in re.findall(r"(\S+)= ([^=]+?)(?= \S+= |$)", e[2]):
                values[model.layout.columns(name)] = [float(v) for v in numbers.split()]
            length, source = len(e[1].split()), len(sources[sentence].split())
            values[model.layout.columns("LengthRatio0")] = -abs(np.log((length + 1) / (source + 1)))
            values[model.layout.columns("TargetWords0")] = length
            scores.append(values @ model.weights)
        expected.append(own[int(np.argmax(scores))][1])
    assert best == expected


def test_applying_without_the_plugin_names_what_is_missing(lists, tmp_path, capsys):
    (tmp_path / "words.py").write_text(FEATURE)
    weights = tmp_path / "weights"
    argv = ["rescore", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--src", str(lists / "src")]
    assert main([*argv, "--train", "--out", str(weights), "--plugins", str(tmp_path / "words.py"), "--feature",
                 "target-words", "--algorithm", "mert"]) == 0
    KINDS.pop("target-words")  # another process: the kind is not registered
    assert main([*argv, "--weights", str(weights)]) == 1
    assert "target-words that are not registered here" in capsys.readouterr().err.splitlines()[-1]


ERRORS = [
    ("nope.py", None, 2, r"--plugins nope.py: no such file"),
    ("x.txt", "x = 1\n", 2, r"--plugins x.txt: not a Python file \(.py\)"),
    ("bad.py", "import numpy\n\nx = numpy.nothing\n", 1,
     r"--plugins bad.py failed to load: bad.py:3: AttributeError: .*nothing'"),
    ("syntax.py", "def f(:\n", 1, r"--plugins syntax.py failed to load: syntax.py:1: SyntaxError: invalid syntax .*"),
    ("exit.py", "import sys\n\nsys.exit(3)\n", 1, r"--plugins exit.py failed to load: exit.py:3: SystemExit: 3$"),
    ("empty.py", "x = 1\n", 2, r"--plugins empty.py adds no tuner .* and registers no feature"),
    ("clash.py", EXAMPLE.read_text().replace('"random-search"', '"mert"'), 2,
     r"--plugins clash.py:6: tuner class RandomSearch has the name 'mert' of pbmt's own MERT"),
    ("loop.py", EXAMPLE.read_text().replace('"decode-optimise"', '"sampler"'), 2,
     r"--plugins loop.py:6: tuner class RandomSearch has loop 'sampler': a tuner of one's own runs in the "
     r"decode-optimise loop"),
    ("seed.py", EXAMPLE.read_text().replace('"--tries"', '"--seed"'), 2,
     r"random-search's option --seed is spelt as one of pbmt optimize's own"),
    ("restarts.py", EXAMPLE.read_text().replace('"--tries"', '"--restarts"'), 2,
     r"random-search's option --restarts is spelt as an option of mert: give it another name"),
    ("nodefault.py", EXAMPLE.read_text().replace("tries: int = 20", "tries: int"), 2,
     r"--plugins nodefault.py:6: tuner class RandomSearch has constructor parameters without a default \(tries\): "
     r"a tuner's settings are keyword arguments with defaults"),
    ("parameter.py", EXAMPLE.read_text().replace('"tries", RANDOM', '"n_tries", RANDOM'), 2,
     r"--plugins parameter.py:6: tuner class RandomSearch has option --tries setting 'n_tries', which its "
     r"constructor does not take \(it takes tries, step\)"),
    ("fit.py", EXAMPLE.read_text().replace("def fit(self, data, initial_weights, rng)",
                                           "def fit(self, data, initial_weights)"), 2,
     r"--plugins fit.py:6: tuner class RandomSearch has fit\(self, data, initial_weights\), which does not take "
     r"\(self, data, initial_weights, rng\)"),
]


@pytest.mark.parametrize("name, text, code, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_a_plugin_that_cannot_be_used_is_one_line_naming_it(lists, tmp_path, monkeypatch, capsys, name, text,
                                                            code, message):
    monkeypatch.chdir(tmp_path)
    if text is not None:
        (tmp_path / name).write_text(text)
    assert main(["optimize", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--plugins",
                 name]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.match(r"pbmt optimize: error: " + message, err), err
    if "option" not in message:  # refused before it was added (an option's spelling: when the parser is built)
        assert registry.algorithms() == registry.ALGORITHMS


def test_a_plugin_that_is_a_folder_is_said_to_be_one(lists, tmp_path, capsys):
    (tmp_path / "tuners.py").mkdir()
    assert main(["optimize", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--plugins",
                 str(tmp_path / "tuners.py")]) == 2
    assert capsys.readouterr().err == (f"pbmt optimize: error: --plugins {tmp_path / 'tuners.py'}: is a directory, "
                                       "expected a Python file\n")


def test_an_error_in_a_plugins_fit_names_the_plugins_line(lists, tmp_path, capsys):
    broken = EXAMPLE.read_text().replace("best, best_bleu = initial, pool.bleu(initial)",
                                         "best, best_bleu = initial, 1 / 0")
    (tmp_path / "broken.py").write_text(broken)
    assert main(["optimize", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--plugins",
                 str(tmp_path / "broken.py"), "--algorithm", "random-search"]) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == (f"pbmt optimize: error in the plugin {tmp_path / 'broken.py'} (--plugins): "
                    f"{tmp_path / 'broken.py'}:20: ZeroDivisionError: division by zero")


FITS = [
    ("        return self\n", "", "returned None, not the tuner"),
    ("        self.weights_ = best\n", "", "set no weights_"),
    ("self.weights_ = best\n", "self.weights_ = best[:-1]\n", r"set weights_ of shape \(3,\), not \(4,\)"),
    ("self.weights_ = best\n", "self.weights_ = best * np.nan\n", "set weights_ with 4 that are not finite"),
    ("self.weights_ = best\n", "self.weights_ = 'best'\n", "set weights_ to a str, not numbers"),
]


@pytest.mark.parametrize("old, new, problem", FITS, ids=["none", "unset", "short", "nan", "text"])
def test_a_fit_that_breaks_the_contract_is_one_line_naming_the_tuner(lists, tmp_path, capsys, old, new, problem):
    """Each was 'internal error: this is a bug in pbmt' (an AttributeError in the loop) or a message printing
    the weights over several lines."""
    (tmp_path / "mine.py").write_text("import numpy as np\n" + EXAMPLE.read_text().replace(old, new))
    assert main(["optimize", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--plugins",
                 str(tmp_path / "mine.py"), "--algorithm", "random-search"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.fullmatch(rf"pbmt optimize: error: RandomSearch.fit \({tmp_path / 'mine.py'}"
                                                  rf":\d+\) {problem}.*\n", err), err


def test_model_tune_refuses_a_tuner_object_that_breaks_the_contract(tiny_model_dir):
    import pbmt

    namespace: dict = {}
    exec(EXAMPLE.read_text().replace('    title = "random search"\n', ""), namespace)
    model = pbmt.load(tiny_model_dir / "moses.ini")
    with pytest.raises(pbmt.base.errors.UsageError, match=r"^tuner class RandomSearch has no title"):
        model.tune(["a b"], ["a b"], algorithm=namespace["RandomSearch"](), tokenized=True)


@pytest.mark.parametrize("body, message", [
    ("return [1, 2]", r"sentence_values gave 2 values, not 1 \(the feature's size\)$"),
    ("return [len(hypothesis.translations())]",
     r"the hypothesis has no word alignment \(the n-best list needs pbmt's word alignment field\)$"),
])
def test_a_plugin_features_wrong_values_are_said_as_they_are(lists, tmp_path, capsys, body, message):
    """A feature giving two values for its one column was said to need the word alignment field."""
    (tmp_path / "words.py").write_text(FEATURE.replace("return [len(hypothesis.target)]", body))
    assert main(["rescore", "--n-best", str(lists / "nbest"), "--refs", str(lists / "refs"), "--train", "--out",
                 str(tmp_path / "weights"), "--plugins", str(tmp_path / "words.py"), "--feature", "target-words",
                 "--algorithm", "mert"]) == 1
    err = capsys.readouterr().err
    assert re.fullmatch(r"pbmt rescore: error: rescoring feature TargetWords0 \(target-words\): " + message + "\n",
                        err), err


def test_plugin_files_are_read_before_the_parser():
    assert plugins.plugin_files(["tune", "--plugins", "a.py", "b.py", "-f", "m", "--plugins=c.py", "--src", "d.py",
                                 "--plugins", "e.py", "--", "--plugins", "f.py"]) == ["a.py", "b.py", "c.py", "e.py"]
    assert plugins.plugin_files(["tune", "--plugins"]) == []


def test_tune_runs_a_plugins_tuner_from_the_shell_as_model_tune_runs_it(tiny_model_dir, tiny_dev, tmp_path):
    import pbmt

    run = subprocess.run([sys.executable, "-m", "pbmt", "tune", "-f", str(tiny_model_dir / "moses.ini"), "--src",
                          str(tiny_dev / "dev.src"), "--refs", str(tiny_dev / "dev.ref"), "--tokenized", "--out",
                          str(tmp_path / "shell"), "--plugins", str(EXAMPLE), "--algorithm", "random-search",
                          "--tries", "30", "--iterations", "2", "--n-best-size", "20", "--threads", "1", "-q"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    tiny = pbmt.load(tiny_model_dir / "moses.ini")
    sources, refs = ((tiny_dev / name).read_text().splitlines() for name in ("dev.src", "dev.ref"))
    tiny.tune(sources, refs, algorithm=_example_class()(tries=30), tokenized=True, iterations=2, n_best=20,
              out=tmp_path / "python", progress=False, threads=1)
    shell, python = (MosesConfig.read(tmp_path / name / "moses.ini").weights for name in ("shell", "python"))
    assert shell == python and shell != MosesConfig.read(tiny_model_dir / "moses.ini").weights
    logs = [[row.split("\t") for row in (tmp_path / name / "log.tsv").read_text().splitlines()]
            for name in ("shell", "python")]
    timed = [logs[0][0].index("decode_s"), logs[0][0].index("optimize_s")]
    untimed = [[[v for k, v in enumerate(row) if k not in timed] for row in log] for log in logs]
    assert len(untimed[0]) == 3 and untimed[0] == untimed[1]  # a header and two iterations


def test_a_plugins_global_feature_reaches_samplerank_workers(tiny_model_dir, tiny_dev, tmp_path):
    """A worker process (--workers, --scheduler) gets SampleRank's chains as their pickle and builds their global
    features there: the plugin that registered a feature's kind runs there first. A process that never ran it
    stands for the worker."""
    import pickle

    from pbmt.features import name_features
    from pbmt.model.model import TranslationModel
    from pbmt.tune.sampler_chains import Chains, encode_dev

    (tmp_path / "words.py").write_text(FEATURE)
    plugins.load_plugins([str(tmp_path / "words.py")])
    model = TranslationModel.load(tiny_model_dir / "moses.ini")
    sources, refs = ((tiny_dev / name).read_text().splitlines() for name in ("dev.src", "dev.ref"))
    specs = name_features([("target-words", None), ("repetition", None)], model.layout.names, nbest=False)
    state = pickle.dumps(Chains(model, encode_dev(model, sources, refs), None, specs))
    code = ("import pickle, sys; chains = pickle.load(sys.stdin.buffer); "
            "print(*[f'{type(f).__name__} {f.names[0]}' for f in chains.global_features], sep=', ')")
    worker = subprocess.run([sys.executable, "-c", code], input=state, capture_output=True)
    assert worker.returncode == 0, worker.stderr.decode()[-2000:]
    assert worker.stdout.decode().strip() == "target_words TargetWords0, Repetition Repetition0"
