"""Rescoring on Moses's dev 100-best: features against kenlm and Moses, training, the weights file."""

import gzip
import math
from dataclasses import replace

import kenlm
import numpy as np
import pytest

from pbmt.base.config import MosesConfig
from pbmt.base.errors import FormatError, PbmtError
from pbmt.metrics.bleu import corpus_bleu
from pbmt.model.features import FeatureLayout
from pbmt.tune.pool import References
from pbmt.tune.rescore import RescoringModel, decoder_weights, read_lists, to_pool, train, with_features
from pbmt.features import KINDS, FeatureSpec, name_features, register

HALF = 25


@pytest.fixture(scope="module")
def split(bible, tmp_path_factory):
    """The first 2 * HALF dev sentences' n-best lists, renumbered into a train and a test half."""
    folder = tmp_path_factory.mktemp("rescore")
    halves = {"train": [], "test": []}
    with gzip.open(bible / "model" / "dev.moses.nbest100.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            sid, rest = line.split(" ||| ", 1)
            if int(sid) >= 2 * HALF:
                break
            half = "train" if int(sid) < HALF else "test"
            halves[half].append(f"{int(sid) % HALF} ||| {rest}")
    src = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    ref = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()
    paths = {}
    for i, half in enumerate(("train", "test")):
        for kind, text in (("nbest", "".join(halves[half])), ("es", "\n".join(src[i * HALF:(i + 1) * HALF]) + "\n"),
                           ("en", "\n".join(ref[i * HALF:(i + 1) * HALF]) + "\n")):
            paths[half, kind] = folder / f"{half}.{kind}"
            paths[half, kind].write_text(text, encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def lists(split, bible):
    """Train and test lists with LM1 (the 5-gram LM), the length ratio and consensus features."""
    out = {}
    for half in ("train", "test"):
        base = read_lists(split[half, "nbest"], (split[half, "es"]).read_text(encoding="utf-8").splitlines())
        specs = name_features([("lm", str(bible / "lm5.arpa.gz")), ("length-ratio", None), ("consensus", None)],
                              base.layout.names)
        out[half] = (with_features(base, specs), specs)
    return out


def test_lm_feature_equals_kenlm_and_moses(bible, split):
    base = read_lists(split["train", "nbest"], n_sentences=3)
    three = with_features(base, name_features([("lm", str(bible / "lm3.arpa.gz"))], base.layout.names))
    column = three.layout.columns("LM1")
    # Moses's own LM0 is the same 3-gram LM, printed to 6 significant digits
    np.testing.assert_allclose(three.features[:, column][:, 0], base.features[:, base.layout.columns("LM0")][:, 0],
                               rtol=2e-6, atol=1e-4)
    reference = kenlm.Model(str(bible / "lm5.arpa.gz"))
    five = with_features(base, name_features([("lm", str(bible / "lm5.arpa.gz"))], base.layout.names))
    expected = [math.log(10) * reference.score(text, bos=True, eos=True) for text in five.texts]
    np.testing.assert_allclose(five.features[:, five.layout.columns("LM1")][:, 0], expected, rtol=1e-6, atol=1e-4)


def test_length_ratio_and_consensus_by_brute_force(lists):
    train_lists = lists["train"][0]
    ratio = train_lists.features[:, train_lists.layout.columns("LengthRatio0")][:, 0]
    consensus = train_lists.features[:, train_lists.layout.columns("Consensus0")]
    for s in (0, 7):
        lo, hi = train_lists.offsets[s], train_lists.offsets[s + 1]
        source_words = len(train_lists.sources[s].split())
        posterior = np.exp(train_lists.totals[lo:hi] - train_lists.totals[lo:hi].max())
        posterior /= posterior.sum()
        grams = [[{tuple(t.split()[i:i + n]) for i in range(len(t.split()) - n + 1)} for t in train_lists.texts[lo:hi]]
                 for n in range(1, 5)]
        for j in range(0, hi - lo, 9):
            target_words = len(train_lists.texts[lo + j].split())
            assert ratio[lo + j] == pytest.approx(-abs(math.log((target_words + 1) / (source_words + 1))))
            for n in range(4):
                mine = grams[n][j]
                expected = np.mean([sum(p for p, theirs in zip(posterior, grams[n]) if g in theirs) for g in mine])
                assert consensus[lo + j, n] == pytest.approx(expected, rel=1e-9)


def test_decoder_weights_are_recovered_from_the_totals(bible, lists):
    train_lists = lists["train"][0]
    n_decoder = 14
    weights = decoder_weights(train_lists.features[:, :n_decoder], train_lists.totals, train_lists.offsets)
    config = MosesConfig.read(bible / "model" / "moses.ini")
    layout = FeatureLayout(train_lists.layout.names[:6], ("",) * 6, train_lists.layout.sizes[:6])
    expected = np.array([v for name in layout.names for v in config.weights[name]])
    # the totals and features are printed to 6 digits, and reordering and distortion are rarely non-zero
    np.testing.assert_allclose(weights, expected, atol=0.05)
    np.testing.assert_allclose(weights[7:], expected[7:], atol=2e-4)
    scores = train_lists.features[:, :n_decoder] @ weights
    assert np.mean(np.array([np.argmax(scores[lo:hi]) for lo, hi in
                             zip(train_lists.offsets[:-1], train_lists.offsets[1:])]) == 0) >= 0.95


def test_training_improves_the_training_bleu_and_transfers(split, lists):
    (train_lists, specs), (test_lists, _) = lists["train"], lists["test"]
    references = {h: References.read(split[h, "en"]) for h in ("train", "test")}
    before = {h: corpus_bleu(to_pool(l, references[h]).stats[l.offsets[:-1]])
              for h, l in (("train", train_lists), ("test", test_lists))}
    for algorithm, params in (("listnet", {"epochs": 30}), ("listnet", {"normalisation": "score", "epochs": 30}),
                              ("mert", {"restarts": 2})):
        model = train(train_lists, references["train"], specs, algorithm, np.random.default_rng(1), **params)
        pool = to_pool(train_lists, references["train"])
        after = corpus_bleu(pool.stats[model.best(train_lists)])
        assert after >= before["train"], algorithm
        test_pool = to_pool(test_lists, references["test"])
        assert corpus_bleu(test_pool.stats[model.best(test_lists)]) > before["test"] - 0.02, algorithm


def test_weights_file_round_trip_ranks_alike(tmp_path, split, lists):
    (train_lists, specs), (test_lists, _) = lists["train"], lists["test"]
    references = References.read(split["train", "en"])
    for params in ({"epochs": 5}, {"epochs": 5, "normalisation": "score"}):
        model = train(train_lists, references, specs, "listnet", np.random.default_rng(3), **params)
        model.write(tmp_path / "weights")
        again = RescoringModel.read(tmp_path / "weights")
        assert again.features == tuple(specs) and again.normalisation == model.normalisation
        assert again.parameters == model.parameters
        assert again.parameters["gain"] == "bleu+1-unclipped" and again.parameters["epochs"] == 5
        np.testing.assert_array_equal(again.weights, model.weights)
        np.testing.assert_array_equal(again.scores(test_lists), model.scores(test_lists))
        raw = replace(again, normalisation="none", scaling=None, scaled_weights=None)
        np.testing.assert_array_equal(raw.best(test_lists), again.best(test_lists))
    text = (tmp_path / "weights").read_text()
    assert "[weight]\n" in text and "LM1= " in text and '"kind": "consensus"' in text


def test_training_is_deterministic(split, lists):
    train_lists, specs = lists["train"]
    references = References.read(split["train", "en"])
    a, b = (train(train_lists, references, specs, "listnet", np.random.default_rng(9), epochs=4).weights
            for _ in range(2))
    np.testing.assert_array_equal(a, b)


def test_a_registered_feature_is_added_by_name(split):
    @register("hyp-words", prefix="HypWords")
    def hyp_words(hypothesis):
        """Target words."""
        return [len(hypothesis.target)]

    try:
        base = read_lists(split["test", "nbest"], (split["test", "es"]).read_text(encoding="utf-8").splitlines()[:2],
                          n_sentences=2)
        specs = name_features([("hyp-words", None)], base.layout.names)
        assert specs == [FeatureSpec("hyp-words", "HypWords0")]
        extended = with_features(base, specs)
        assert extended.features[:, -1].tolist() == [len(t.split()) for t in base.texts]
    finally:
        del KINDS["hyp-words"]
    with pytest.raises(PbmtError, match="unknown global feature"):
        name_features([("hyp-chars", None)], ())
    with pytest.raises(PbmtError, match="needs an argument"):
        name_features([("lm", None)], ())
    without_sources = read_lists(split["test", "nbest"], n_sentences=2)
    for kind in ("length-ratio", "lexical-consistency"):  # the kinds that read the source
        with pytest.raises(PbmtError, match="needs the source sentences"):
            with_features(without_sources, name_features([(kind, None)], ()))
    specs = name_features([("repetition", None)], ())  # reads the target alone: the same values without --src
    np.testing.assert_array_equal(with_features(without_sources, specs).features[:, -1],
                                  with_features(base, specs).features[:, -1])


def test_bad_inputs_name_the_file_and_line(tmp_path, split):
    lines = split["test", "nbest"].read_text().splitlines()
    bad = tmp_path / "bad.nbest"
    bad.write_text("\n".join(lines[:3] + [lines[3].replace("Distortion0= 0 ", "")]) + "\n")
    with pytest.raises(FormatError, match="bad.nbest:4: features"):
        read_lists(bad)
    bad.write_text("\n".join(lines[:3]) + "\n")
    with pytest.raises(FormatError, match="sentence id 0 is outside the 0 source"):
        read_lists(bad, [])
    weights = tmp_path / "weights"
    weights.write_text("[weight]\nLM0= 0.5\n\n[rescore]\n{\"algorithm\": \n")
    with pytest.raises(FormatError, match="weights:5: \\[rescore\\] is not valid JSON"):
        RescoringModel.read(weights)
    weights.write_text("[weight]\nLM0= x\n")
    with pytest.raises(FormatError, match="weights:2: weights of LM0"):
        RescoringModel.read(weights)


def test_a_sentence_id_far_beyond_the_entries_of_a_list_without_sources_is_an_error_not_a_vast_array(tmp_path):
    from pbmt.tune.rescore import UNSOURCED_EMPTY

    path = tmp_path / "gap.nbest"
    entry = "{} ||| a b ||| LM0= -1.5 WordPenalty0= -2 ||| -3.5"
    path.write_text("\n".join(entry.format(k) for k in (0, 0, 5)) + "\n")
    lists = read_lists(path)  # sentences 1 to 4 have no entries
    assert lists.n_sentences == 6 and np.diff(lists.offsets).tolist() == [2, 0, 0, 0, 0, 1]
    path.write_text("\n".join(entry.format(k) for k in (0, 3 + UNSOURCED_EMPTY - 1, 0)) + "\n")
    assert read_lists(path).n_sentences == 3 + UNSOURCED_EMPTY  # as many empty sentences as allowed
    for huge in (4 + UNSOURCED_EMPTY, 2_000_000_000):  # 4 entries: at most 4 + UNSOURCED_EMPTY sentences
        path.write_text("\n".join(entry.format(k) for k in (0, huge, huge, 1)) + "\n")
        with pytest.raises(FormatError, match=f"gap.nbest:2: sentence id {huge} makes {huge + 1:,} sentences of 4 "
                                              "entries: give the source sentences"):
            read_lists(path)
        assert read_lists(path, ["s"] * (huge + 1) if huge < 10 ** 6 else None, n_sentences=2).n_sentences == 2
