"""Sparse families declared as ``moses.ini`` lines of the feature registry, their weights in ``[weight-file]``
(``pbmt.model.sparse.read_sparse``): the same families and weights as the ``pbmt.toml`` ``[sparse]`` table
gives, the same n-best lists, one-line errors naming the ini's line, and ``pbmt tune`` writing the tuned
weights back to a ``[weight-file]`` beside the tuned ini, as Moses's mert-moses.pl does."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from pbmt.base.config import MosesConfig
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.pbmt_toml import read_tables
from pbmt.commands.cli import main
from pbmt.features.translation import Translator
from pbmt.model.block_features import BlockWeights
from pbmt.model.distortion_bins import NAMES as BIN_NAMES
from pbmt.model.model import TranslationModel
from pbmt.model.sparse import CLASSES_FILE, WEIGHTS_FILE, SparseModel, SparseWeights, WordClasses

from support import TINY_SOURCES

CLASSES = WordClasses(("the", "lord", "said", "go", "israel"), [0, 1, 1, 0, 1], ("k0", "k1"))


def _copy(tiny_model_dir, folder):
    shutil.copytree(tiny_model_dir, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    return folder


def _declare(folder, lines: list[str], weight_file: str | None = WEIGHTS_FILE, weights: str = "") -> None:
    """Add sparse feature lines (and a [weight-file] section) to ``folder/moses.ini``."""
    ini = folder / "moses.ini"
    text = ini.read_text().replace("[feature]\n", "[feature]\n" + "".join(line + "\n" for line in lines))
    if weight_file is not None:
        text += f"\n[weight-file]\n{weight_file}\n"
    ini.write_text(text + weights)


def _sparse_pair(tiny_model_dir, tmp_path) -> tuple:
    """The same three families with the same weights, declared by pbmt.toml (``toml``) and by moses.ini lines
    (``ini``): ``(toml folder, ini folder)``."""
    rng = np.random.default_rng(5)
    toml, ini = _copy(tiny_model_dir, tmp_path / "toml"), _copy(tiny_model_dir, tmp_path / "ini")
    boundary = SparseModel.new(CLASSES)
    blocks = BlockWeights(["w:the|the", "blk:dijo|said", "bi:the|lord", "len:the_lord|2"], rng.normal(0, 1, 4))
    model = SparseModel(boundary.boundary, rng.normal(0, 0.3, boundary.size), blocks, ("word", "block"),
                        rng.normal(0, 1, len(BIN_NAMES)))
    model.write(toml, TranslationModel.load(toml / "moses.ini").toml_tables(toml))
    CLASSES.write(ini / CLASSES_FILE)
    model.named_weights().write(ini / WEIGHTS_FILE)
    _declare(ini, [f"ClassBoundaryFeature name=pb path={CLASSES_FILE}", "BlockFeature name=Block kinds=word,block",
                   "DistortionBinFeature"])
    return toml, ini


def test_lines_declare_the_families_and_weights_the_sparse_table_does(tiny_model_dir, tmp_path):
    toml, ini = _sparse_pair(tiny_model_dir, tmp_path)
    by_table, by_lines = (TranslationModel.load(folder / "moses.ini") for folder in (toml, ini))
    assert by_lines.sparse.families == by_table.sparse.families == ("boundary", "block", "distortion")
    assert by_lines.sparse.block_kinds == by_table.sparse.block_kinds == ("word", "block")
    assert by_lines.sparse.in_ini and not by_table.sparse.in_ini
    named, expected = by_lines.sparse.named_weights(), by_table.sparse.named_weights()
    assert named.names == expected.names and np.array_equal(named.values, expected.values)
    assert by_lines.layout == by_table.layout and np.array_equal(by_lines.weights, by_table.weights)
    for k, line in enumerate(TINY_SOURCES[:4]):  # the same n-best lists, sparse features and totals included
        lists = [Translator(m, n_best=10, tokenized=True).translate(k, line).nbest for m in (by_table, by_lines)]
        assert [(e.text, e.sparse, e.total) for e in lists[0]] == [(e.text, e.sparse, e.total) for e in lists[1]]
        assert any(e.sparse for e in lists[0])


def test_a_moses_model_with_a_weight_file_and_no_family_loads_as_before(tiny_model_dir, tmp_path):
    folder = _copy(tiny_model_dir, tmp_path / "moses")
    plain = TranslationModel.load(folder / "moses.ini")
    _declare(folder, [], weight_file="/nowhere/moses-sparse-weights")  # Moses's own sparse weights: not pbmt's
    model = TranslationModel.load(folder / "moses.ini")
    assert model.sparse is None and np.array_equal(model.weights, plain.weights)


@pytest.mark.parametrize("lines, weight_file, weights, message", [
    (["ClassBoundaryFeature name=classes path=word-classes.txt"], None, "",
     ":5: ClassBoundaryFeature names its features pb_... in n-best lists and weights, so its name is pb, not "
     "'classes'"),
    (["DistortionBinFeature num-features=13"], None, "", ":5: DistortionBinFeature is a sparse feature "
     "function: it has no num-features"),
    (["DistortionBinFeature factor=0"], None, "", ":5: DistortionBinFeature takes no factor="),
    (["BlockFeature kinds=word,lexicon"], None, "", ":5: kinds=word,lexicon must be distinct kinds among "
     "block,word,length,orient,bigram"),
    (["ClassBoundaryFeature"], None, "", ":5: ClassBoundaryFeature needs path=FILE"),
    (["ClassBoundaryFeature path=missing.txt"], None, "", ":5: ClassBoundaryFeature pb: path=missing.txt names "
     "no file"),
    (["DistortionBinFeature"], None, "db= 0.1\n", "db is a sparse feature function: its features' weights go in "
     "the file [weight-file] names, not in [weight]"),
    (["DistortionBinFeature"], "missing-weights.txt", "", "[weight-file] names no file"),
    (["DistortionBinFeature"], "w.txt", "", "w.txt: pb_k0_k1 is a feature of the boundary family, which the "
     "model does not declare (its families: distortion)"),
])
def test_a_wrong_line_is_one_error_naming_the_ini_and_its_line(lines, weight_file, weights, message,
                                                              tiny_model_dir, tmp_path):
    folder = _copy(tiny_model_dir, tmp_path / "bad")
    (folder / "word-classes.txt").write_text("the\tk0\n")
    (folder / "w.txt").write_text("pb_k0_k1 0.5\n")
    if weights:
        text = (folder / "moses.ini").read_text()
        (folder / "moses.ini").write_text(text.replace("[weight]\n", "[weight]\n" + weights))
    _declare(folder, lines, weight_file)
    with pytest.raises((FormatError, PbmtError)) as err:
        TranslationModel.load(folder / "moses.ini")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_families_in_both_places_are_refused(tiny_model_dir, tmp_path):
    toml, _ = _sparse_pair(tiny_model_dir, tmp_path)
    _declare(toml, ["DistortionBinFeature"], weight_file=None)
    with pytest.raises(FormatError, match=r"moses.ini:5: DistortionBinFeature declares a sparse family and .*"
                                          r"pbmt.toml has a \[sparse\] table too"):
        TranslationModel.load(toml / "moses.ini")


def test_tune_writes_the_weights_back_to_the_weight_file_beside_the_tuned_ini(tiny_model_dir, tiny_dev, tmp_path):
    folder = _copy(tiny_model_dir, tmp_path / "model")
    CLASSES.write(folder / CLASSES_FILE)
    _declare(folder, [f"ClassBoundaryFeature path={CLASSES_FILE}"], weight_file=None)
    out = tmp_path / "run"
    assert main(["tune", "-q", "-f", str(folder / "moses.ini"), "--tokenized", "--src", str(tiny_dev / "dev.src"),
                 "--refs", str(tiny_dev / "dev.ref"), "--out", str(out), "--algorithm", "mira", "--iterations", "2",
                 "--n-best-size", "20", "--keep", "last", "--mira-epochs", "5"]) == 0
    tuned = MosesConfig.read(out / "moses.ini")
    assert [f.type for f in tuned.sparse_features] == ["ClassBoundaryFeature"]
    assert tuned.weight_file == out / WEIGHTS_FILE and "sparse" not in read_tables(out)
    assert MosesConfig.read(out / "run1.moses.ini").weight_file == out / "run1.sparse-weights.txt"
    kept = SparseWeights.read(out / "run2.sparse-weights.txt")
    assert np.count_nonzero(kept.values)
    model = TranslationModel.load(out / "moses.ini")
    assert _nonzero(model.sparse.named_weights()) == _nonzero(kept)


def _nonzero(weights: SparseWeights) -> dict[str, float]:
    return {n: v for n, v in zip(weights.names, weights.values.tolist()) if v != 0.0}


def test_a_filtered_model_keeps_the_families_and_their_weights(tiny_model_dir, tmp_path):
    _, ini = _sparse_pair(tiny_model_dir, tmp_path)
    (tmp_path / "input.txt").write_text("\n".join(TINY_SOURCES[:3]) + "\n")
    assert main(["filter", "-q", "-f", str(ini / "moses.ini"), "-i", str(tmp_path / "input.txt"), "--tokenized",
                 "--out", str(tmp_path / "filtered")]) == 0
    filtered, whole = (TranslationModel.load(folder / "moses.ini") for folder in (tmp_path / "filtered", ini))
    assert MosesConfig.read(tmp_path / "filtered" / "moses.ini").weight_file == ini / WEIGHTS_FILE
    assert filtered.sparse.families == whole.sparse.families and filtered.sparse.block_kinds == ("word", "block")
    assert _nonzero(filtered.sparse.named_weights()) == _nonzero(whole.sparse.named_weights())


def test_optimize_names_the_sparse_weights_it_tuned_or_the_models_own(tiny_model_dir, tiny_dev, tmp_path):
    _, ini = _sparse_pair(tiny_model_dir, tmp_path)
    nbest = tmp_path / "dev.nbest"
    assert main(["translate", "-q", "-f", str(ini / "moses.ini"), "--tokenized", "-i", str(tiny_dev / "dev.src"),
                 "-o", str(tmp_path / "dev.out"), "--n-best", str(nbest), "--n-best-size", "20"]) == 0
    common = ["optimize", "-q", "--n-best", str(nbest), "--refs", str(tiny_dev / "dev.ref"), "--tokenized", "-f",
              str(ini / "moses.ini")]
    assert main([*common, "--algorithm", "pro", "-o", str(tmp_path / "pro.ini"), "--sparse-weights",
                 str(tmp_path / "pro-weights.txt")]) == 0
    assert MosesConfig.read(tmp_path / "pro.ini").weight_file == tmp_path / "pro-weights.txt"
    tuned = TranslationModel.load(tmp_path / "pro.ini")
    assert _nonzero(tuned.sparse.named_weights()) == _nonzero(SparseWeights.read(tmp_path / "pro-weights.txt"))
    assert main([*common, "--algorithm", "mert", "-o", str(tmp_path / "mert.ini")]) == 0
    assert MosesConfig.read(tmp_path / "mert.ini").weight_file == ini / WEIGHTS_FILE  # MERT keeps them as they are
