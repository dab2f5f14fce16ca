"""Phrase scoring: pbmt's table equals Moses's (shared model/) line for line,
its word translation tables equal Moses's lex files, and on tiny corpora the
lexical weights equal a direct computation."""

from collections import Counter

import numpy as np
import pytest

from pbmt.base.files import read_lines
from pbmt.train.corpus import alignment_from_points, corpus_from_lines
from pbmt.train.extract import extract_phrase_pairs
from pbmt.train.score import (
    alignment_string,
    score_phrase_pairs,
    word_translation,
    write_phrase_table,
    write_word_translation,
)


def _lex_file(path):
    return {tuple(line.split()[:2]): line.split()[2] for _, line in read_lines(path)}


def test_word_translation_equals_moses_lex_files(bible, bible_lexicon, tmp_path):
    write_word_translation(tmp_path / "lex.e2f", tmp_path / "lex.f2e", bible_lexicon)
    for name in ("lex.e2f", "lex.f2e"):
        expected = _lex_file(bible / "model" / f"{name}.gz")
        assert _lex_file(tmp_path / name) == expected  # the 7-decimal strings, NULL included


def test_phrase_table_equals_moses(bible, bible_table_for_dev_test, moses_phrase_table, tmp_path):
    # in memory: the same pairs in the same order, probabilities to Moses's six digits
    pairs = bible_table_for_dev_test.pairs
    src, tgt = pairs.src.strings(), pairs.tgt.strings()
    assert [[src[s], tgt[t]] for s, t in zip(pairs.src_index, pairs.tgt_index)] == [f[:2] for f in moses_phrase_table]
    expected = np.array([[float(x) for x in f[2].split()] for f in moses_phrase_table])
    np.testing.assert_allclose(bible_table_for_dev_test.features, expected, rtol=1e-4, atol=0)
    # written: every line byte for byte (the filtered tables keep whole source phrases)
    path = tmp_path / "phrase-table.gz"
    write_phrase_table(path, bible_table_for_dev_test)
    ours, moses = ([line for _, line in read_lines(p)] for p in (path, bible / "model" / "phrase-table.gz"))
    assert ours == moses


def _moses_lexical_weights(srcs, tgts, aligns):
    """Word translation tables by direct counting (train-model.perl's get_lexical),
    values rounded as its printf "%.7f" does."""
    count, total_f, total_e = Counter(), Counter(), Counter()
    for f, e, points in zip(srcs, tgts, aligns):
        links = [(f[i], e[j]) for i, j in points]
        links += [(f[i], "NULL") for i in range(len(f)) if all(i != a for a, _ in points)]
        links += [("NULL", e[j]) for j in range(len(e)) if all(j != b for _, b in points)]
        for fw, ew in links:
            count[fw, ew] += 1
            total_f[fw] += 1
            total_e[ew] += 1
    p_e_f = {k: float(f"{c / total_f[k[0]]:.7f}") for k, c in count.items()}
    p_f_e = {k: float(f"{c / total_e[k[1]]:.7f}") for k, c in count.items()}
    return p_e_f, p_f_e


def _lex(predicted, given, points, prob, predicted_is_target):
    """Koehn's lexical weight: per predicted word, the mean probability over
    the words it is aligned to, NULL if none."""
    weight = 1.0
    for k, word in enumerate(predicted):
        linked = sorted({i for i, j in points if j == k} if predicted_is_target else {j for i, j in points if i == k})
        if not linked:
            weight *= prob[("NULL", word) if predicted_is_target else (word, "NULL")]
        else:
            pairs = [(given[g], word) if predicted_is_target else (word, given[g]) for g in linked]
            weight *= sum(prob[p] for p in pairs) / len(linked)
    return weight


def _points(mask):
    return {(bit % 8, bit // 8) for bit in range(64) if int(mask) >> bit & 1}


def test_scores_equal_direct_computation(random_corpus):
    rng = np.random.default_rng(11)
    srcs, tgts, aligns = random_corpus(rng, 120)
    src, tgt, alignment = corpus_from_lines(srcs), corpus_from_lines(tgts), alignment_from_points(aligns)
    pairs = extract_phrase_pairs(src, tgt, alignment, max_length=4)
    table = score_phrase_pairs(pairs, word_translation(src, tgt, alignment))
    p_e_f, p_f_e = _moses_lexical_weights(srcs, tgts, aligns)
    src_text, tgt_text = pairs.src.strings(), pairs.tgt.strings()
    for p in range(len(pairs)):
        f = src_text[pairs.src_index[p]].split()
        e = tgt_text[pairs.tgt_index[p]].split()
        count = pairs.count[p]
        count_f = pairs.src.count[pairs.src_index[p]]
        count_e = pairs.tgt.count[pairs.tgt_index[p]]
        expected = [
            count / count_e,
            _lex(f, e, _points(pairs.align_inverse[p]), p_f_e, predicted_is_target=False),
            count / count_f,
            _lex(e, f, _points(pairs.align_direct[p]), p_e_f, predicted_is_target=True),
        ]
        np.testing.assert_allclose(table.features[p], expected, rtol=1e-12)


@pytest.mark.parametrize(
    "mask, text", [(0b1, "0-0"), ((1 << 9) | (1 << 1), "1-0 1-1"), ((1 << 8) | (1 << 2) | (1 << 63), "2-0 0-1 7-7")]
)
def test_alignment_string_is_by_target_then_source(mask, text):
    assert alignment_string(mask) == text
