"""SampleRank with global features: whole documents as batches, global weights learnt with the dense ones."""

import numpy as np
import pytest

from pbmt.base.documents import Documents
from pbmt.features import name_features, parse_requests
from pbmt.model.model import TranslationModel
from pbmt.tune.samplerank import SampleRank
from sampler_task import fitted_on

KEYS = ["Joshua 1:1", "Joshua 1:2", "Joshua 1:3", "Joshua 2:1", "Joshua 2:2", "Ruth 1:1", "Ruth 1:2", "Ruth 1:3"]


@pytest.mark.parametrize("start", ["gloss", "decoder"])
def test_global_weights_are_learnt_with_the_dense_ones(bible, start):
    """From the decoder's 1-best, a batch's options are pruned under the chain's weights; the global features then
    read the options' own phrase table (an option's candidate indexes it), not the starting model's."""
    model = TranslationModel.load(bible / "model" / "moses.ini")
    src = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:8]
    ref = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:8]
    specs = name_features(parse_requests("lexical-consistency:1,repetition"), model.layout.names, nbest=False)
    kw = dict(epochs=2, samples_per_sentence=15, burn_in_per_sentence=1, global_features=specs, batch_size=2,
              workers=2, start=start, **({"update": "expected-gain", "temperature": 0.1} if start == "decoder" else {}))
    documents = Documents.from_keys(KEYS)
    fitted = fitted_on(SampleRank(**kw), model, src, ref, np.random.default_rng(2), documents=documents)
    dense = model.layout.size
    assert fitted.weights_.shape == (dense + 3,)
    assert fitted.feature_names_ == ("LexicalConsistency0", "Repetition0_0", "Repetition0_1")
    assert np.any(fitted.weights_[dense:] != 0) and np.any(fitted.weights_[:dense] != model.weights)
    assert sum(e.steps for e in fitted.log_) == 2 * 16 * 8
    # the same run on one worker, and with batch_size 100: every batch is a whole document either way
    again = fitted_on(SampleRank(**{**kw, "workers": 1, "batch_size": 100}), model, src, ref,
                                                                      np.random.default_rng(2), documents=documents)
    np.testing.assert_array_equal(again.weights_, fitted.weights_)


def test_pbmt_tune_samplerank_writes_global_weights(bible, tmp_path):
    from pbmt.commands.cli import main
    from pbmt.features import build, read_weights

    out = tmp_path / "tuned"
    assert main(["tune", "-q", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.tok.es"),
                 "--refs", str(bible / "dev.tok.en"), "--out", str(out), "--sentences", "6",
                 "--algorithm", "samplerank", "--documents", str(bible / "dev.keys"), "--epochs", "1",
                 "--samples-per-sentence", "5", "--burn-in-per-sentence", "1", "--global-features", "repetition",
                 "--seed", "3"]) == 0
    model = TranslationModel.load(out / "moses.ini")
    weights = read_weights(out / "global-weights.txt",
                           build(name_features(parse_requests("repetition"), nbest=False), model.vocab))
    assert weights.shape == (2,) and np.all(np.isfinite(weights))
    assert len((out / "log.tsv").read_text().splitlines()) == 2
