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


def test_an_empty_list_is_an_error(tmp_path):
    (tmp_path / "nbest").write_text("\n")
    with pytest.raises(PbmtError, match="no entries"):
        read_pool(tmp_path / "nbest", References(REFS))
    with pytest.raises(FormatError, match="nbest:1"):
        (tmp_path / "nbest").write_text("0 ||| x\n")
        read_pool(tmp_path / "nbest", References(REFS))
