"""The sparse-family ablation bench: which weights each decode keeps."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
spec = importlib.util.spec_from_file_location("benchmarks_bench_sparse_ablation",
                                              BENCHMARKS / "bench_sparse_ablation.py")
ablation = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = ablation
spec.loader.exec_module(ablation)

WEIGHTS = """# sparse feature weights (pbmt): name value
pb_c11_c18 -0.6
w:le|him 0.44
blk:la|the 0.1
len:2|1 0.02
db_f2 0.3
"""


def test_each_family_is_named_by_its_prefix():
    assert [ablation.family(n) for n in ("pb_c1_c2", "w:a|b", "blk:a|b", "len:1|2", "db_0")] == [
        "boundary", "lexicon", "phrase-pairs", "length", "distortion"]
    with pytest.raises(SystemExit, match="'ori:a|R' is of no family"):
        ablation.family("ori:a|R")


def test_an_ablated_folder_keeps_the_model_and_the_other_families_weights(tmp_path):
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / "sparse-weights.txt").write_text(WEIGHTS, encoding="utf-8")
    for name in ("moses.ini", "pbmt.toml", "word-classes.txt", "run1.sparse-weights.txt"):
        (tuned / name).write_text(name, encoding="utf-8")
    weights = ablation.read_weights(tuned / "sparse-weights.txt")
    assert [name for name, _ in weights] == ["pb_c11_c18", "w:le|him", "blk:la|the", "len:2|1", "db_f2"]
    ini = ablation.ablated_folder(tuned, tmp_path / "cut", weights, {"lexicon", "distortion"})
    assert ini == tmp_path / "cut" / "moses.ini" and ini.read_text() == "moses.ini"
    assert sorted(p.name for p in ini.parent.iterdir()) == ["moses.ini", "pbmt.toml", "sparse-weights.txt",
                                                           "word-classes.txt"]
    kept = ablation.read_weights(ini.parent / "sparse-weights.txt")
    assert [line for _, line in kept] == ["pb_c11_c18 -0.6", "blk:la|the 0.1", "len:2|1 0.02"]


def test_no_decode_needs_the_full_weights_decode(tmp_path, monkeypatch, capsys):
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / "moses.ini").write_text("", encoding="utf-8")
    (tuned / "sparse-weights.txt").write_text(WEIGHTS, encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    for name in ("test.tok.es", "test.tok.en"):
        (data / name).write_text("a\n", encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["bench_sparse_ablation.py", "--tuned", str(tuned), "--out", str(tmp_path / "o"),
                                      "--data", str(data), "--no-decode"])
    with pytest.raises(SystemExit):
        ablation.main()
    assert "the full weights' decode, does not exist" in capsys.readouterr().err


def test_the_pool_counts_the_dev_sentences_of_each_family_and_of_the_kept_weights(tmp_path):
    import numpy as np
    import scipy.sparse

    from pbmt.tune.pool import FeatureLayout, Pool

    # two sentences: candidates 0, 1 of sentence 0 and candidate 2 of sentence 1
    sparse = scipy.sparse.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0], [1.0, 0.0, 0.0]]))
    pool = Pool(FeatureLayout(("A",), ("",), (1,)), np.zeros((3, 1)), np.ones((3, 10), np.int64),
                np.array([0, 2, 3]), np.arange(3, dtype=np.uint64), ("a", "b", "c"), sparse,
                ("pb_c1_c2", "Block_w:a|b", "db_0"))
    np.savez(tmp_path / "checkpoint.npz", **pool.arrays())
    weights = [("pb_c1_c2", "pb_c1_c2 0.5"), ("w:a|b", "w:a|b -0.3")]
    assert ablation.dev_sentence_counts(tmp_path, weights) == [
        ["boundary", 1, 2.0, 1, 2.0, "100.0%", 0.5], ["lexicon", 1, 1.0, 1, 1.0, "100.0%", 0.3],
        ["distortion", 1, 1.0, 0, None, None, 0]]
