"""Phrase extraction: equal to a direct enumeration of all consistent phrase
pairs on tiny random corpora (counts, orientations, alignment choice), and
to Moses's table size on the shared corpus."""

from collections import Counter, defaultdict

import numpy as np
import pytest

from pbmt.base.errors import PbmtError
from pbmt.train.corpus import alignment_from_points, corpus_from_lines
from pbmt.train.extract import extract_phrase_pairs

MONO, SWAP, OTHER = 0, 1, 2


def _orientation(left, right):
    return MONO if left and not right else SWAP if right and not left else OTHER


def _enumerate(srcs, tgts, aligns, max_len):
    """Every (source span, target span) pair holding an alignment point and no
    point that links a word inside it to a word outside, both spans at most
    ``max_len`` words; with its orientations and phrase-internal alignment."""
    count = Counter()
    orientation = defaultdict(lambda: [0] * 6)
    alignments = defaultdict(Counter)
    for f, e, points in zip(srcs, tgts, aligns):
        points = set(points)

        def corner(i, j):
            return (i, j) in ((-1, -1), (len(f), len(e))) or (i, j) in points

        for fs in range(len(f)):
            for fe in range(fs, min(len(f), fs + max_len)):
                for es in range(len(e)):
                    for ee in range(es, min(len(e), es + max_len)):
                        inside = [(i, j) for i, j in points if fs <= i <= fe and es <= j <= ee]
                        if not inside or any((fs <= i <= fe) != (es <= j <= ee) for i, j in points):
                            continue
                        key = (" ".join(f[fs : fe + 1]), " ".join(e[es : ee + 1]))
                        count[key] += 1
                        alignments[key][frozenset((i - fs, j - es) for i, j in inside)] += 1
                        prev = _orientation(corner(fs - 1, es - 1), corner(fe + 1, es - 1))
                        nxt = _orientation(corner(fe + 1, ee + 1), corner(fs - 1, ee + 1))
                        orientation[key][prev] += 1
                        orientation[key][3 + nxt] += 1
    return count, orientation, alignments


def _vector(points, by_target, n):
    """An alignment as Moses's vector (over target or source words) of sorted position sets."""
    if by_target:
        return tuple(tuple(sorted(i for i, j in points if j == k)) for k in range(n))
    return tuple(tuple(sorted(j for i, j in points if i == k)) for k in range(n))


def _points(mask):
    return frozenset((bit % 8, bit // 8) for bit in range(64) if int(mask) >> bit & 1)


@pytest.mark.parametrize("max_len", [1, 3, 7, 8])
def test_extraction_equals_direct_enumeration(random_corpus, max_len):
    rng = np.random.default_rng(max_len)
    srcs, tgts, aligns = random_corpus(rng, 150)
    src, tgt = corpus_from_lines(srcs), corpus_from_lines(tgts)
    pairs = extract_phrase_pairs(src, tgt, alignment_from_points(aligns), max_length=max_len)
    count, orientation, alignments = _enumerate(srcs, tgts, aligns, max_len)

    src_text = pairs.src.strings()
    tgt_text = pairs.tgt.strings()
    keys = [(src_text[s], tgt_text[t]) for s, t in zip(pairs.src_index, pairs.tgt_index)]
    assert dict(zip(keys, pairs.count.tolist())) == dict(count)
    assert len(keys) == len(count)
    # Moses's order: bytewise by "src |||", then "tgt |||"
    assert keys == sorted(keys, key=lambda k: ((k[0] + " |||").encode(), (k[1] + " |||").encode()))

    src_total, tgt_total = Counter(), Counter()
    for (f, e), c in count.items():
        src_total[f] += c
        tgt_total[e] += c
    assert dict(zip(src_text, pairs.src.count.tolist())) == dict(src_total)
    assert dict(zip(tgt_text, pairs.tgt.count.tolist())) == dict(tgt_total)

    for p, key in enumerate(keys):
        assert pairs.orientation[p].tolist() == orientation[key]
        n_f, n_e = len(key[0].split()), len(key[1].split())
        seen = alignments[key]
        best_direct = max(seen, key=lambda a: (seen[a], _vector(a, True, n_e)))
        best_inverse = max(seen, key=lambda a: (seen[a], _vector(a, False, n_f)))
        assert _points(pairs.align_direct[p]) == best_direct
        assert _points(pairs.align_inverse[p]) == best_inverse


def test_the_sentence_kernel_compiles_for_no_literal(random_corpus):
    """A constant passed from one kernel to another is a type of its own, which numba compiles anew: extraction
    gives its per-sentence kernel a typed flag and counter, so a first run compiles it once per array type."""
    from numba import types

    from pbmt.train import _extract_kernels

    srcs, tgts, aligns = random_corpus(np.random.default_rng(0), 5)
    extract_phrase_pairs(corpus_from_lines(srcs), corpus_from_lines(tgts), alignment_from_points(aligns), max_length=3)
    for signature in _extract_kernels._sentence.signatures:
        assert not [t for t in signature if isinstance(t, types.Literal)], signature


def test_alignment_ties_go_to_the_larger_vector_per_direction():
    # "a a" / "x x" seen once with each alignment: a tie, so the larger wins.
    # Over target words ({0}, {1}) > ({0}, {0}); over source words
    # ({0, 1}, {}) > ({0}, {1}): lex(e|f) and lex(f|e) use different ones.
    one_to_two = [(0, 0), (0, 1)]
    diagonal = [(0, 0), (1, 1)]
    srcs = [["a", "a"], ["a", "a"]]
    tgts = [["x", "x"], ["x", "x"]]
    pairs = extract_phrase_pairs(
        corpus_from_lines(srcs), corpus_from_lines(tgts), alignment_from_points([one_to_two, diagonal])
    )
    texts = [(pairs.src.strings()[s], pairs.tgt.strings()[t]) for s, t in zip(pairs.src_index, pairs.tgt_index)]
    p = texts.index(("a a", "x x"))
    assert pairs.count[p] == 2
    assert _points(pairs.align_direct[p]) == set(diagonal)
    assert _points(pairs.align_inverse[p]) == set(one_to_two)


def test_full_corpus_has_moses_number_of_phrase_pairs(bible_pairs):
    # the Moses table built from the same alignment had 3,183,114 pairs (model/README.md)
    assert len(bible_pairs) == 3_183_114
    assert bible_pairs.src.count.sum() == bible_pairs.tgt.count.sum() == bible_pairs.count.sum()


def test_bad_arguments():
    src = corpus_from_lines([["a"]])
    with pytest.raises(PbmtError, match="max phrase length"):
        extract_phrase_pairs(src, src, alignment_from_points([[(0, 0)]]), max_length=9)
    with pytest.raises(PbmtError, match="alignments"):
        extract_phrase_pairs(src, src, alignment_from_points([[(0, 0)], []]))
    with pytest.raises(PbmtError, match="sentence 1 has a point outside"):
        extract_phrase_pairs(src, src, alignment_from_points([[(0, 1)]]))
