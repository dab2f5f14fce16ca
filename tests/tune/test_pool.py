import gzip
import itertools

import numpy as np
import pytest
import sacrebleu

from pbmt.base.errors import FormatError, PbmtError
from pbmt.metrics.bleu import segment_stats
from pbmt.model.features import FeatureLayout
from pbmt.base.nbest import NBestEntry
from pbmt.tune.pool import Pool, References, pool_from_entries, read_pool

LAYOUT = FeatureLayout(("LM0", "TM0"), ("KENLM", "PhraseDictionaryMemory"), (1, 2))
REFS = ["the lord said unto moses", "go and house of israel", "and the lord"]


def entry(sentence, text, lm=-1.0, tm=(0.5, -2.0), segmentation=((0, 1, 0, 1),)):
    return NBestEntry(sentence, text, {"LM0": (lm,), "TM0": tm}, 0.0, segmentation)


@pytest.fixture
def references():
    return References(REFS)


def test_pool_holds_features_and_bleu_stats_by_sentence(references):
    entries = [entry(2, "the lord"), entry(0, "the lord said", lm=-2.0), entry(0, "lord said unto moses"),
               entry(1, "go and", tm=(1.0, 1.0))]
    pool = pool_from_entries(entries, LAYOUT, references)
    assert pool.offsets.tolist() == [0, 2, 3, 4]
    assert pool.texts == ("the lord said", "lord said unto moses", "go and", "the lord")
    assert pool.features.tolist() == [[-2.0, 0.5, -2.0], [-1.0, 0.5, -2.0], [-1.0, 1.0, 1.0], [-1.0, 0.5, -2.0]]
    expected = segment_stats(list(pool.texts), [[r] for r in REFS], pool.sentence)
    assert np.array_equal(pool.stats, expected)
    assert pool.best(np.array([1.0, 0.0, 0.0])).tolist() == [1, 2, 3]
    assert pool.best(np.zeros(3)).tolist() == [0, 2, 3]  # ties: the earlier candidate
    hyps = ["lord said unto moses", "go and", "the lord"]
    assert 100 * pool.bleu(np.array([1.0, 0.0, 0.0])) == pytest.approx(
        sacrebleu.corpus_bleu(hyps, [REFS], tokenize="none").score)


def test_merge_drops_known_derivations_or_strings(references):
    first = pool_from_entries([entry(0, "the lord"), entry(1, "go")], LAYOUT, references)
    again = [entry(0, "the lord"), entry(0, "the lord", segmentation=((0, 1, 0, 2),), lm=-3.0),
             entry(1, "go and"), entry(1, "go and"), entry(2, "and")]
    merged, added = first.merge(pool_from_entries(again, LAYOUT, references))
    assert added == 3 and merged.texts == ("the lord", "the lord", "go", "go and", "and")
    first = pool_from_entries([entry(0, "the lord"), entry(1, "go")], LAYOUT, references, dedup="string")
    by_string, added = first.merge(pool_from_entries(again, LAYOUT, references, dedup="string"))
    assert added == 2 and by_string.texts == ("the lord", "go", "go and", "and")
    assert first.merge(first)[1] == 0


def test_entries_without_segmentation_are_told_apart_by_features(references):
    plain = [entry(0, "a", segmentation=()), entry(0, "a", segmentation=(), lm=-5.0),
             entry(0, "a", segmentation=()), entry(1, "b", segmentation=()), entry(2, "c", segmentation=())]
    assert pool_from_entries(plain, LAYOUT, references).n_candidates == 4


def test_arrays_round_trip(references, tmp_path):
    pool = pool_from_entries([entry(0, ""), entry(0, "the lord"), entry(1, "go"), entry(2, "")], LAYOUT, references)
    np.savez(tmp_path / "p.npz", **pool.arrays())
    with np.load(tmp_path / "p.npz") as arrays:
        back = Pool.from_arrays(arrays)
    assert back.layout == pool.layout and back.texts == pool.texts
    for name in ("features", "stats", "offsets", "keys"):
        assert np.array_equal(getattr(back, name), getattr(pool, name))
    empty = Pool.empty(LAYOUT, 3)
    assert Pool.from_arrays(empty.arrays()).n_candidates == 0


def test_reads_moses_nbest_lists(bible, tmp_path):
    with gzip.open(bible / "model" / "dev.moses.nbest100.gz", "rt", encoding="utf-8") as f:
        lines = list(itertools.takewhile(lambda line: int(line.split(" |||")[0]) < 4, f))
    (tmp_path / "nbest").write_text("".join(lines))
    refs = (bible / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:4]
    pool = read_pool(tmp_path / "nbest", References(refs))
    assert pool.layout.names == ("LexicalReordering0", "Distortion0", "LM0", "WordPenalty0", "PhrasePenalty0",
                                 "TranslationModel0")
    assert pool.n_candidates == len(lines)  # Moses lists one derivation per line
    assert len(set(zip(pool.sentence, pool.texts))) < pool.n_candidates
    by_string = read_pool(tmp_path / "nbest", References(refs), dedup="string")
    assert by_string.n_candidates == len(set(zip(pool.sentence, pool.texts)))
    firsts = [pool.texts[i] for i in pool.offsets[:-1]]
    moses_1best = [line.strip() for line in (bible / "model" / "dev.moses.1best").read_text().splitlines()[:4]]
    assert firsts == moses_1best
    assert 100 * pool.bleu(np.zeros(pool.layout.size)) == pytest.approx(
        sacrebleu.corpus_bleu(firsts, [refs], tokenize="none").score)


NBEST = """0 ||| the lord ||| LM0= -1 TM0= 0.5 -2 ||| -3
0 ||| lord ||| LM0= -2 TM0= 0.5 -1 ||| -3
1 ||| go ||| LM0= -1 TM0= 0 0 ||| -1
2 ||| and ||| LM0= -1 TM0= 0 0 ||| -1
"""


def test_an_empty_hypothesis_is_a_candidate_of_length_zero(tmp_path):
    path = tmp_path / "nbest"
    path.write_text(NBEST.replace("1 ||| go |||", "1 |||  |||"))
    pool = read_pool(path, References(REFS))
    empty = pool.offsets[1]
    assert pool.texts[empty] == ""
    assert pool.stats[empty].tolist() == [0, 5] + [0] * 8


@pytest.mark.parametrize("old, new, message", [
    ("LM0= -2 TM0= 0.5 -1", "LM0= -2 TM0= 0.5", "nbest:2: TM0 has 1 values, expected 2"),
    ("LM0= -2 TM0= 0.5 -1", "LM0= nan TM0= 0.5 -1", "nbest:2: feature value .* of LM0 is not a finite number"),
    ("LM0= -2 TM0= 0.5 -1", "LM0= -inf TM0= 0.5 -1", "nbest:2: feature value .* of LM0 is not a finite number"),
    ("LM0= -2 TM0= 0.5 -1", "TM0= 0.5 -1", "nbest:2: features TM0 differ from the expected LM0 TM0"),
    ("2 ||| and", "3 ||| and", "nbest:4: sentence id 3 is outside the 3 references"),
    ("1 ||| go ||| LM0= -1 TM0= 0 0 ||| -1\n", "", "1 of 3 sentences have no candidate in the pool: 1"),
])
def test_bad_nbest_lists_name_the_line(tmp_path, old, new, message):
    path = tmp_path / "nbest"
    path.write_text(NBEST.replace(old, new, 1))
    with pytest.raises(PbmtError, match=message):
        read_pool(path, References(REFS))


def test_references_running_on_past_the_list_say_both_counts(tmp_path):
    (tmp_path / "nbest").write_text(NBEST)
    with pytest.raises(PbmtError, match=r"nbest: the list's sentences end at id 2 \(3 sentences\), but the "
                                        r"references have 5 lines: are they the list's dev set\?"):
        read_pool(tmp_path / "nbest", References(REFS + ["one more", "and another"]))


def test_an_empty_list_is_an_error(tmp_path):
    (tmp_path / "nbest").write_text("\n")
    with pytest.raises(PbmtError, match="no entries"):
        read_pool(tmp_path / "nbest", References(REFS))
    with pytest.raises(FormatError, match="nbest:1"):
        (tmp_path / "nbest").write_text("0 ||| x\n")
        read_pool(tmp_path / "nbest", References(REFS))


def sparse_entry(sentence, text, features, lm=-1.0, segmentation=((0, 1, 0, 1),)):
    return NBestEntry(sentence, text, {"LM0": (lm,), "TM0": (0.5, -2.0)}, 0.0, segmentation, (), tuple(features))


def test_sparse_features_are_held_as_csr_over_the_names_seen(references):
    entries = [sparse_entry(1, "go", [("pb_a_b", 2.0)]), sparse_entry(0, "the lord", [("pb_c_d", 1.0), ("pb_a_b", 1.0)]),
               sparse_entry(0, "the", []), sparse_entry(2, "and", [("pb_e_f", -0.5)])]
    pool = pool_from_entries(entries, LAYOUT, references)
    assert pool.sparse_names == ("pb_a_b", "pb_c_d", "pb_e_f") and pool.n_weights == 6
    assert pool.texts == ("the lord", "the", "go", "and")
    assert pool.sparse.toarray().tolist() == [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, -0.5]]
    dense = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(pool.scores(dense), pool.features @ dense)  # sparse weights zero
    full = np.concatenate([dense, [0.5, 2.0, -4.0]])
    np.testing.assert_allclose(pool.scores(full), pool.features @ dense + pool.sparse.toarray() @ full[3:])
    assert pool.best(full).tolist() == [0, 2, 3]
    with pytest.raises(ValueError, match="expected 3 or 6 weights"):
        pool.scores(np.zeros(4))
    # a later list adds names; old candidates keep their values under the merged names
    later = pool_from_entries([sparse_entry(0, "lord", [("pb_g_h", 3.0), ("pb_c_d", 1.0)]), sparse_entry(1, "go", [])],
                              LAYOUT, references)
    merged, added = pool.merge(later)
    assert added == 1 and merged.sparse_names == ("pb_a_b", "pb_c_d", "pb_e_f", "pb_g_h")
    assert merged.texts == ("the lord", "the", "lord", "go", "and")
    assert merged.sparse.toarray()[:, [0, 1, 3]].tolist() == [[1, 1, 0], [0, 0, 0], [0, 1, 3], [2, 0, 0], [0, 0, 0]]
    # a dense pool merged with a sparse one, and the checkpoint's arrays
    dense_pool = pool_from_entries([entry(0, "x"), entry(1, "y"), entry(2, "z")], LAYOUT, references)
    assert dense_pool.sparse is None and dense_pool.merge(pool)[0].sparse.shape == (7, 3)
    back = Pool.from_arrays(merged.arrays())
    assert back.sparse_names == merged.sparse_names
    assert (back.sparse != merged.sparse).nnz == 0


def test_a_pool_stores_only_the_features_that_fire():
    """100,000 distinct sparse features over 20,000 candidates, 5 each: memory grows with what fires."""
    rng = np.random.default_rng(3)
    names = [f"pb_{i}_x" for i in range(100_000)]
    fired = rng.permutation(100_000).tolist()
    entries = [sparse_entry(i % 3, "the", [(names[fired[(5 * i + k) % 100_000]], 1.0) for k in range(5)],
                            segmentation=((0, 1, 0, 1), (i, i + 1, 1, 1))) for i in range(20_000)]
    pool = pool_from_entries(entries, LAYOUT, References(REFS))
    assert pool.n_candidates == 20_000 and len(pool.sparse_names) == 100_000
    assert pool.sparse.nnz == 100_000 and pool.sparse.data.nbytes == 800_000


def test_several_references_score_as_sacrebleu_with_several_references(tmp_path):
    second = ["the lord spake unto moses", "go to the house of israel", "the lord god"]
    hyps = ["the lord spake unto moses , saying", "go and house", "lord god"]
    (tmp_path / "r1").write_text("\n".join(REFS) + "\n")
    (tmp_path / "r2").write_text("\n".join(second) + "\n")
    references = References.read([tmp_path / "r1", tmp_path / "r2"])
    assert references.n_references == 2
    pool = pool_from_entries([entry(s, h) for s, h in enumerate(hyps)], LAYOUT, references)
    assert 100 * pool.bleu(np.zeros(3)) == pytest.approx(
        sacrebleu.corpus_bleu(hyps, [REFS, second], tokenize="none").score)
    (tmp_path / "short").write_text("the lord\n")
    with pytest.raises(PbmtError, match="differ in length"):
        References.read([tmp_path / "r1", tmp_path / "short"])
