"""The full-table LM estimate kept beside the phrase table's binary cache: a second load maps it instead of
computing it, and a changed LM file is never answered from the old one, which is removed."""

import gzip
import shutil

import numpy as np
import pytest

from pbmt.model.model import TranslationModel
from pbmt.model.moses_features import KENLM


@pytest.fixture
def model_dir(tiny_model_dir, repo_corpus, tmp_path):
    """The tiny model with its own copy of the LM (so the test may change it) and no binary caches."""
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    shutil.copy(repo_corpus / "lm3.arpa.gz", folder / "lm.arpa.gz")
    ini = folder / "moses.ini"
    ini.write_text(ini.read_text().replace(str(repo_corpus / "lm3.arpa.gz"), "lm.arpa.gz"))
    return folder


def _computed(model):
    """Every candidate's weighted LM estimate computed afresh (the LM's ``estimate`` of the table's pairs)."""
    lm = next(f for f in model.features if isinstance(f, KENLM))
    columns = model.layout.slices[model.features.index(lm)][1]
    return lm.estimate(model.full_table.pairs(model.vocab)) @ model.weights[columns]


def test_the_second_load_maps_the_estimate_and_a_changed_lm_is_estimated_again(model_dir, monkeypatch):
    first = TranslationModel.load(model_dir / "moses.ini")
    kept = list((model_dir / "phrase-table.gz.pbmt-cache").glob("estimate-*"))
    assert len(kept) == 1
    estimate = first._table_estimate(first.weights)
    np.testing.assert_array_equal(estimate, _computed(first))

    with monkeypatch.context() as patch:
        patch.setattr(KENLM, "estimate", lambda self, pairs: pytest.fail("estimated again"))
        second = TranslationModel.load(model_dir / "moses.ini")
        np.testing.assert_array_equal(second._table_estimate(second.weights), estimate)
        np.testing.assert_array_equal(second.cand_lm_estimate, first.cand_lm_estimate)

    # the same LM with every unigram's probability halved (log10 - 0.30103): another estimate
    with gzip.open(model_dir / "lm.arpa.gz", "rt") as f:
        lines = f.read().split("\n")
    section = None
    for i, line in enumerate(lines):
        if line.startswith("\\"):
            section = line
        elif section == "\\1-grams:" and line:
            fields = line.split("\t")
            fields[0] = f"{float(fields[0]) - 0.30103:.6f}"
            lines[i] = "\t".join(fields)
    with gzip.open(model_dir / "lm.arpa.gz", "wt") as f:
        f.write("\n".join(lines))
    third = TranslationModel.load(model_dir / "moses.ini")
    changed = third._table_estimate(third.weights)
    np.testing.assert_array_equal(changed, _computed(third))
    assert not np.allclose(changed, estimate)
    # the old LM's estimate can never be read again: the new one replaces it instead of piling up beside it
    now = list((model_dir / "phrase-table.gz.pbmt-cache").glob("estimate-*"))
    assert len(now) == 1 and now[0].name != kept[0].name
    assert now[0].name.rsplit("-", 1)[0] == kept[0].name.rsplit("-", 1)[0]  # the same feature's


def test_a_derived_cache_replaces_only_its_own_key_s_older_files(tmp_path):
    from pbmt.model import cache

    source, lm1, lm2 = (tmp_path / name for name in ("table.gz", "lm1", "lm2"))
    for path in (source, lm1, lm2):
        path.write_text("x")
    ones = {"values": np.ones(3)}

    def save(key, inputs):
        kind = cache.derived_kind("estimate", key, inputs)
        cache.save_arrays(source, kind, "1", ones)
        return kind

    first, other = save("lm", [lm1]), save("lm", [lm2])  # another file: another key, both kept
    assert cache.replaced_kinds("phrase-table") is None and cache.replaced_kinds(first) is not None
    assert cache.replaced_kinds(first) != cache.replaced_kinds(other)
    lm1.write_text("changed")
    newer = save("lm", [lm1])
    names = sorted(p.name for p in (tmp_path / "table.gz.pbmt-cache").iterdir())
    assert newer != first and names == sorted([newer, other])
    assert cache.load_arrays(source, other, "1", ["values"]) is not None
