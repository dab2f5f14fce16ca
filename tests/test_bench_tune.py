"""The tuning benchmark's command line: --seeds and the cells each sparse cell is compared with."""

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"benchmarks_{name}"] = module
    spec.loader.exec_module(module)
    return module


bench = load("bench_tune")


@pytest.mark.parametrize("text, seeds", [("2", [2]), ("1", [1]), ("1-3", [1, 2, 3]), ("1-2,5", [1, 2, 5]),
                                         ("3,1", [3, 1]), ("4-4", [4]), (" 1 , 2-3", [1, 2, 3])])
def test_seeds_are_seeds_and_ranges(text, seeds):
    assert bench.seed_list(text) == seeds


@pytest.mark.parametrize("text, says", [("3-1", "'3-1' is neither a seed"), ("a", "'a' is neither"),
                                        ("1,,2", "'' is neither"), ("-2", "'-2' is neither"),
                                        ("1.5", "'1.5' is neither"), ("1-3,2", "names a seed twice")])
def test_bad_seeds_are_refused_by_name(text, says):
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        bench.seed_list(text)


def test_the_command_line_refuses_bad_seeds_in_one_line(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_tune.py", "--seeds", "3-1"])
    with pytest.raises(SystemExit) as stop:
        bench.main()
    assert stop.value.code == 2
    assert "argument --seeds: '3-1' is neither a seed" in capsys.readouterr().err


def test_every_sparse_cell_is_compared_with_a_dense_cell_of_the_same_tuner():
    for cell, (algorithm, family, options, dense) in bench.SPARSE_LOOP.items():
        assert dense in bench.TUNERS and family in bench.FAMILIES
        assert dense.split("-")[0] == algorithm
    assert bench.dense_of("mira-all-psi0.3") == "mira-psi0.3"
    assert bench.SPARSE_LOOP["pro-all-l1-10"][2] == ["--sparse-l1", "10"]
    assert bench.SPARSE_LOOP["mira-all-psi0.3-min3"] == ("mira", "all", ["--interpolation", "0.3",
                                                                         "--sparse-min-sentences", "3"], "mira-psi0.3")
    assert bench.SPARSE_LOOP["pro-lexicon-l1-3-min5"][2] == ["--sparse-l1", "3", "--sparse-min-sentences", "5"]
    assert "mira-distortion-min3" not in bench.TUNERS  # the cut-off is for families of many features
    # SampleRank's family cells run at its defaults: the expected-gain preset with the unclipped batch gain
    assert bench.dense_of("samplerank-boundary") == "samplerank-expected-gain-unclipped"
    assert bench.dense_of("mert") is None


def test_samplerank_family_cells_name_a_model_of_families_samplerank_updates():
    # SampleRank updates the boundary weights and the distortion bins in place, not the block family's named
    # weights: its "all" cell tunes a model folder of those two families, and every family cell is compared
    # with SampleRank's defaults without sparse features
    for cell, model in bench.SAMPLERANK_FAMILY_MODEL.items():
        assert cell in bench.SAMPLERANK and cell in bench.TUNERS
        assert bench.dense_of(cell) == "samplerank-expected-gain-unclipped"
        assert model is None or not bench.MODELS[model][1]
    assert bench.MODELS[bench.SAMPLERANK_FAMILY_MODEL["samplerank-all"]] == (("boundary", "distortion"), ())
    assert bench.SAMPLERANK["samplerank-all"][-2:] == ["--features", "boundary"]
    # the loop's families are model folders too, as before
    assert all(bench.MODELS[family] == families for family, families in bench.FAMILIES.items())
