"""A model with two KENLM lines (the shared 3-gram and the 5-gram): two features, as Moses 1 loads them."""

import dataclasses
import itertools
import math
import re
import subprocess

import pytest

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.base.nbest import read_nbest
from pbmt.search.decoder import decode
from pbmt.search.derivation import model_score, score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.output import derivation_from_entry

from repo_data import REPO
from support import assert_reproduces_moses

MOSES = REPO.parent / "shared" / "tools" / "moses" / "bin" / "moses"
N_SENTENCES = 8


@pytest.fixture(scope="module")
def two_lms(bible, tmp_path_factory):
    """The shared model with the 5-gram as a second LM (LM1, after LM0), its ini's paths absolute (Moses
    resolves them from its working folder), and the first dev sentences' options."""
    text = (bible / "model" / "moses.ini").read_text(encoding="utf-8")
    text = re.sub(r"path=([^/\s]\S*)", lambda m: f"path={(bible / 'model' / m.group(1)).resolve()}", text)
    text = re.sub(r"^(KENLM name=LM0 .*)$", rf"\1\nKENLM name=LM1 factor=0 path={bible / 'lm5.arpa.gz'} order=5",
                  text, flags=re.M)
    text = re.sub(r"^(LM0=.*)$", r"\1\nLM1= 0.3", text, flags=re.M)
    ini = tmp_path_factory.mktemp("two-lms") / "moses.ini"
    ini.write_text(text, encoding="utf-8")
    model = TranslationModel.load(ini)
    sources = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:N_SENTENCES]
    return model, ini, sources, [TranslationOptions.of_words(model, s.split()) for s in sources]


def test_each_lm_is_a_feature_of_its_own(two_lms):
    model, _, _, options = two_lms
    assert [lm.order for lm in model.lms] == [3, 5]
    assert model.layout.names.index("LM1") == model.layout.names.index("LM0") + 1
    for opts in options[:3]:
        best = decode(model, opts)[0]
        features = score_derivation(best.derivation, opts, model)
        words = best.derivation.target_words(opts)
        for lm, name in zip(model.lms, ("LM0", "LM1")):
            column = model.layout.columns(name).start
            assert features[column] == pytest.approx(math.log(10) * lm.score_tokens(words).sum(), abs=1e-6)


@pytest.mark.parametrize("search", ["stack", "cube"])
def test_search_scores_equal_rescoring(two_lms, search):
    model, _, _, options = two_lms
    model = dataclasses.replace(model, settings=dataclasses.replace(model.settings, search=search))
    for opts in options[:4]:
        for found in decode(model, opts, n_best=10):
            assert found.score == pytest.approx(model_score(found.derivation, opts, model), abs=1e-6)


@pytest.mark.skipif(not MOSES.exists(), reason=f"Moses 1 not found at {MOSES}")
def test_two_lms_agree_with_moses(two_lms, tmp_path):
    model, ini, sources, options = two_lms
    nbest_file = tmp_path / "nbest.txt"
    subprocess.run([str(MOSES), "-f", str(ini), "-v", "0", "-search-algorithm", "1", "-n-best-list", str(nbest_file),
                    "10", "-include-segmentation-in-n-best", "true"], input="\n".join(sources) + "\n", text=True,
                   cwd=tmp_path, check=True, capture_output=True)
    groups = [list(g) for _, g in itertools.groupby(read_nbest(nbest_file), key=lambda e: e.sentence)]
    assert len(groups) == N_SENTENCES
    for opts, entries in zip(options, groups):
        for entry in entries[:5]:
            assert_reproduces_moses(entry, opts, model)
        theirs = model_score(derivation_from_entry(entries[0], opts, model), opts, model)
        cube = dataclasses.replace(model, settings=SearchSettings(search="cube"))
        assert decode(cube, opts)[0].score >= theirs - 1e-6
