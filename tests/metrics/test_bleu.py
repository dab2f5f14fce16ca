"""BLEU statistics and scores against sacrebleu and from-scratch formulas."""

import math
from collections import Counter

import numpy as np
import pytest
import sacrebleu

from pbmt.metrics.bleu import (
    HYP_LEN,
    MATCHES,
    N_STATS,
    REF_LEN,
    SMOOTHING,
    TOTALS,
    batch_bleu,
    bleu,
    brevity_penalty,
    corpus_bleu,
    encode_segments,
    format_bleu,
    precisions,
    reference_sets,
    segment_stats,
    segment_stats_ids,
    sentence_bleu_plus1,
)
from pbmt.tune.gains import GAINS, gain_of
from pbmt.base.vocab import Vocab


def sacre_corpus(hyps, refs_per_segment, **kwargs):
    """sacrebleu corpus BLEU in [0, 1]; references given per segment, same count each."""
    streams = [list(stream) for stream in zip(*refs_per_segment)]
    return sacrebleu.corpus_bleu(hyps, streams, tokenize="none", force=True, **kwargs).score / 100


def sacre_plus1(hyp, refs):
    return sacrebleu.sentence_bleu(hyp, refs, smooth_method="add-k", smooth_value=1, tokenize="none").score / 100


def brute_stats(hyp, refs):
    """One row of statistics with Counters, straight from the definition."""
    words = hyp.split()
    ref_words = [r.split() for r in refs]
    closest = min((abs(len(words) - len(r)), len(r)) for r in ref_words)[1]
    row = [len(words), closest]
    matches, totals = [], []
    for n in range(1, 5):
        grams = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
        clip = Counter()
        for r in ref_words:
            for gram, count in Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1)).items():
                clip[gram] = max(clip[gram], count)
        matches.append(sum(min(count, clip[gram]) for gram, count in grams.items()))
        totals.append(max(len(words) - n + 1, 0))
    return row + matches + totals


def random_corpus(rng, n, n_refs, n_words, max_len):
    def sentence():
        return " ".join(f"w{i}" for i in rng.integers(0, n_words, rng.integers(0, max_len + 1)))

    return [sentence() for _ in range(n)], [[sentence() for _ in range(n_refs)] for _ in range(n)]


def read(path):
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def dev(bible):
    return read(bible / "model" / "dev.moses.1best"), read(bible / "dev.tok.en")


def test_corpus_bleu_of_moses_1best_equals_sacrebleu(dev):
    hyps, refs = dev
    stats = segment_stats(hyps, [[r] for r in refs])
    assert stats.shape == (len(hyps), N_STATS) and stats.dtype == np.int64
    expected = sacre_corpus(hyps, [[r] for r in refs])
    assert corpus_bleu(stats) == pytest.approx(expected, abs=1e-9)
    assert round(100 * corpus_bleu(stats), 2) == 38.57


def test_bleu_plus1_of_every_moses_line_equals_sacrebleu_add_k(dev):
    hyps, refs = dev
    ours = sentence_bleu_plus1(segment_stats(hyps, [[r] for r in refs]))
    expected = [sacre_plus1(h, [r]) for h, r in zip(hyps, refs)]
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_refs", [1, 2, 3])
def test_rows_equal_brute_force_and_corpus_bleu_equals_sacrebleu(seed, n_refs):
    rng = np.random.default_rng(seed)
    # few distinct words: many repeated n-grams, so clipping is exercised
    hyps, refs = random_corpus(rng, 40, n_refs, n_words=4 + 4 * seed, max_len=12)
    stats = segment_stats(hyps, refs)
    np.testing.assert_array_equal(stats, [brute_stats(h, r) for h, r in zip(hyps, refs)])
    for method in ("exp", "none"):
        expected = sacre_corpus(hyps, refs, smooth_method=method)
        assert float(bleu(stats.sum(axis=0), method)) == pytest.approx(expected, abs=1e-9)
    assert corpus_bleu(stats) == pytest.approx(sacre_corpus(hyps, refs), abs=1e-9)


@pytest.mark.parametrize(
    "hyps, refs",
    [
        (["a b c d", "e f g h i"], [["a b c x"], ["e f g y i"]]),  # no 4-gram match
        (["a b c d", "e f g h"], [["a x b y"], ["e z f"]]),  # only unigram matches
        (["a b", "c"], [["a b c d"], ["c d e"]]),  # no 4-grams at all: total_4 = 0
        (["", ""], [["a b"], ["c"]]),  # empty hypotheses
        (["x y z"], [["a b c"]]),  # no match at all
        (["", "a b c d e"], [["", "x"], ["a b c d", "a b c d e f"]]),  # empty reference; length tie
        (["a a a a a a"], [["a a", "a a a"]]),  # clipped by the best single reference
    ],
)
def test_degenerate_corpora_equal_sacrebleu(hyps, refs):
    stats = segment_stats(hyps, refs)
    np.testing.assert_array_equal(stats, [brute_stats(h, r) for h, r in zip(hyps, refs)])
    assert corpus_bleu(stats) == pytest.approx(sacre_corpus(hyps, refs), abs=1e-9)
    for h, r, row in zip(hyps, refs, stats):
        assert float(sentence_bleu_plus1(row)) == pytest.approx(sacre_plus1(h, r), abs=1e-9)


def test_closest_reference_length_ties_go_to_the_shorter():
    stats = segment_stats(["a b c d e", "a b c d e"], [["a b c d e f", "a b c d"], ["x x x", "x x x x x x x"]])
    assert stats[:, REF_LEN].tolist() == [4, 3]
    assert stats[:, HYP_LEN].tolist() == [5, 5]


def test_exp_smoothing_halves_each_further_unmatched_order():
    # orders 2 and 4 unmatched: 1/(2 * 8) then 1/(4 * 6)
    row = np.array([9, 9, 5, 0, 3, 0, 9, 8, 7, 6])
    np.testing.assert_allclose(precisions(row, "exp"), [5 / 9, 1 / 16, 3 / 7, 1 / 24])
    assert float(bleu(row, "none")) == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_bleu_plus1_of_random_short_sentences_equals_sacrebleu(seed):
    rng = np.random.default_rng(100 + seed)
    hyps, refs = random_corpus(rng, 60, 1 + seed % 3, n_words=5, max_len=6)
    ours = sentence_bleu_plus1(segment_stats(hyps, refs))
    np.testing.assert_allclose(ours, [sacre_plus1(h, r) for h, r in zip(hyps, refs)], rtol=0, atol=1e-9)


@pytest.mark.parametrize("k", [0.5, 2.0])
def test_add_k_with_other_constants_equals_sacrebleu(k):
    rng = np.random.default_rng(7)
    hyps, refs = random_corpus(rng, 30, 2, n_words=6, max_len=8)
    for h, r, row in zip(hyps, refs, segment_stats(hyps, refs)):
        expected = sacrebleu.sentence_bleu(h, r, smooth_method="add-k", smooth_value=k, tokenize="none").score
        assert float(bleu(row, "add-k", k)) == pytest.approx(expected / 100, abs=1e-9)


def direct_batch_bleu(row, add, clipped=True):
    """Batch BLEU from its definition: add to every match and total, lengths unsmoothed."""
    hyp_len, ref_len = row[HYP_LEN], row[REF_LEN]
    log_p = sum(math.log((m + add) / (t + add)) for m, t in zip(row[MATCHES], row[TOTALS])) / 4
    if hyp_len == 0:
        return 0.0
    bp = 1.0 if hyp_len >= ref_len and clipped else math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(log_p)


@pytest.mark.parametrize("clipped", [True, False])
@pytest.mark.parametrize("add", [0.01, 0.5])
def test_batch_bleu_equals_direct_formula(add, clipped):
    rng = np.random.default_rng(3)
    hyps, refs = random_corpus(rng, 200, 1, n_words=8, max_len=10)
    stats = segment_stats(hyps, refs)
    batches = np.stack([stats[rng.choice(len(stats), 5)].sum(axis=0) for _ in range(50)])
    batches[0, MATCHES] = 0  # no match anywhere: still positive
    batches[1, TOTALS.start + 3] = 0  # no 4-gram in the batch
    batches[1, MATCHES.start + 3] = 0
    np.testing.assert_allclose(batch_bleu(batches, add, clipped), [direct_batch_bleu(b, add, clipped)
                                                                    for b in batches], rtol=1e-12)
    assert batch_bleu(batches[0], add, clipped) > 0
    assert clipped or np.any(batch_bleu(batches, add, clipped) > batch_bleu(batches, add))


def test_scores_are_vectorised_over_leading_dimensions():
    rng = np.random.default_rng(5)
    hyps, refs = random_corpus(rng, 60, 1, n_words=6, max_len=10)
    stats = segment_stats(hyps, refs).reshape(3, 4, 5, N_STATS).sum(axis=2)
    for score in (bleu, sentence_bleu_plus1, batch_bleu, brevity_penalty):
        values = score(stats)
        assert values.shape == (3, 4)
        np.testing.assert_allclose(values, [[float(score(row)) for row in block] for block in stats], rtol=1e-15)
    assert precisions(stats).shape == (3, 4, 4)


def test_id_and_string_paths_agree_on_nbest_like_input():
    rng = np.random.default_rng(11)
    n_sets, per_set = 20, 30
    ref_sizes = rng.integers(1, 4, n_sets)
    refs_ids = [rng.integers(3, 40, rng.integers(0, 15)).astype(np.int32) for _ in range(ref_sizes.sum())]
    hyps_ids = [rng.integers(3, 45, rng.integers(0, 15)).astype(np.int32) for _ in range(n_sets * per_set)]
    ref_set = np.repeat(np.arange(n_sets), per_set)
    rng.shuffle(ref_set)

    def csr(seqs):
        return np.r_[0, np.cumsum([len(s) for s in seqs])].astype(np.int64), np.concatenate(seqs)

    set_offsets = np.r_[0, np.cumsum(ref_sizes)]
    compiled = reference_sets(*csr(refs_ids), set_offsets)
    by_ids = segment_stats_ids(*csr(hyps_ids), ref_set, compiled)

    def text(ids):
        return " ".join(f"t{i}" for i in ids)

    ref_texts = [text(r) for r in refs_ids]
    sets = [ref_texts[set_offsets[s] : set_offsets[s + 1]] for s in range(n_sets)]
    by_strings = segment_stats([text(h) for h in hyps_ids], sets, ref_index=ref_set)
    np.testing.assert_array_equal(by_ids, by_strings)
    np.testing.assert_array_equal(by_ids, [brute_stats(text(h), sets[s]) for h, s in zip(hyps_ids, ref_set)])


def test_shared_vocab_ids_and_encode_segments():
    vocab = Vocab(["the"])
    offsets, words = encode_segments(["the cat", "", " the  dog "], vocab)
    assert offsets.tolist() == [0, 2, 2, 4]
    assert vocab.words(words) == ["the", "cat", "the", "dog"]
    stats = segment_stats(["the cat"], [["the dog"]], vocab=vocab)
    assert stats[0].tolist() == [2, 2, 1, 0, 0, 0, 2, 1, 0, 0]


def test_swapping_one_sentence_in_a_batch_sum():
    hyps, refs = ["a b c", "d e f g", "h"], [["a b c"], ["d e x g"], ["h i"]]
    stats = segment_stats(hyps, refs)
    new = segment_stats(["d e x g"], [refs[1]])[0]
    swapped = stats.sum(axis=0) - stats[1] + new
    expected = segment_stats([hyps[0], "d e x g", hyps[2]], refs).sum(axis=0)
    np.testing.assert_array_equal(swapped, expected)
    assert batch_bleu(swapped) > batch_bleu(stats.sum(axis=0))


def test_format_bleu_matches_sacrebleu_text(dev):
    hyps, refs = dev
    stats = segment_stats(hyps, [[r] for r in refs]).sum(axis=0)
    sacre = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", force=True)
    assert format_bleu(stats) == f"BLEU = {sacre.score:.2f} {sacre._verbose}"


def test_smoothing_table_and_bad_input():
    assert set(SMOOTHING) == {"none", "exp", "add-k", "add-all"}
    assert SMOOTHING["add-k"].default == 1.0 and SMOOTHING["add-all"].default == 0.01
    with pytest.raises(ValueError, match="unknown smoothing"):
        bleu(np.zeros(N_STATS), "floor")
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 10\)"):
        bleu(np.zeros(9))
    offsets, words = np.array([0, 2]), np.array([3, 4])
    with pytest.raises(ValueError, match="no reference"):
        reference_sets(offsets, words, np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="offsets"):
        reference_sets(np.array([0, 3]), words)
    compiled = reference_sets(offsets, words)
    with pytest.raises(ValueError, match="ref_set"):
        segment_stats_ids(offsets, words, np.array([1]), compiled)
    with pytest.raises(ValueError, match="pass ref_index"):
        segment_stats(["a", "b"], [["a"]])


def test_paired_bootstrap_equals_the_exact_resampling_distribution():
    """On 3 sentences every resample can be enumerated: the estimate approaches the exact probability."""
    from itertools import product

    from pbmt.metrics.bleu import paired_bootstrap

    refs = [["the lord said unto moses"], ["and the house of israel"], ["go unto the land"]]
    a = segment_stats(["the lord said unto moses", "and the house", "go to the land"], refs)
    b = segment_stats(["the lord spake unto moses", "and the house of israel", "go unto land"], refs)
    exact = 0.0
    for draw in product(range(3), repeat=3):
        counts = np.bincount(draw, minlength=3)
        if bleu(counts @ b) > bleu(counts @ a):
            exact += 1 / 27
    assert 0.0 < exact < 1.0
    estimate = paired_bootstrap(a, b, np.random.default_rng(0), resamples=40000)
    assert estimate == pytest.approx(exact, abs=0.01)
    assert paired_bootstrap(a, a, np.random.default_rng(0)) == 0.0


def test_unclipped_brevity_penalty_bleu_plus1_from_scratch():
    # Nakov et al. (2012): BLEU+1 whose brevity penalty exp(1 - r/c) is not capped at 1
    rng = np.random.default_rng(8)
    hyps, refs = random_corpus(rng, 200, 1, n_words=5, max_len=12)
    hyps += ["", "a b", "a b c d e f g h i"]
    refs += [["a b"], ["a b c d e f g h"], ["a b"]]
    stats = segment_stats(hyps, refs)
    unclipped = sentence_bleu_plus1(stats, clipped=False)
    longer = 0
    for h, r, row, value in zip(hyps, refs, stats, unclipped):
        c, ref_len = len(h.split()), int(row[REF_LEN])
        sacre = sacrebleu.sentence_bleu(h, r, smooth_method="add-k", smooth_value=1, tokenize="none")
        if c == 0 or sacre.score == 0:
            assert value == 0.0
            continue
        precision = math.exp(sum(math.log(p / 100) for p in sacre.precisions) / 4)
        assert value == pytest.approx(precision * math.exp(1 - ref_len / c), rel=1e-9)
        if c > ref_len:
            longer += 1
            assert value > float(sentence_bleu_plus1(row)) == pytest.approx(precision, rel=1e-9)
        else:
            assert value == pytest.approx(sacre.score / 100, rel=1e-9)
    assert longer > 10
    np.testing.assert_array_equal(brevity_penalty(stats, clipped=False) >= brevity_penalty(stats), True)
    np.testing.assert_array_equal(GAINS["bleu+1-unclipped"].score(stats), unclipped)
    np.testing.assert_array_equal(GAINS["bleu+1"].score(stats), sentence_bleu_plus1(stats))
    with pytest.raises(ValueError, match="gain must be one of"):
        gain_of("bleu", "sentence")
