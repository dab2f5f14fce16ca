"""Binary block features: names, ids, escaping, weight files (the decoder with them: tests/search/test_mon_swap.py)."""

from collections import Counter
from urllib.parse import unquote

import numpy as np
import pytest

from pbmt.base.errors import FormatError
from pbmt.model.block_features import (Block, BlockScores, BlockWeights, FeatureIndex, escape_word, is_block_name,
                                       local_names, orient_name, sequence_names)
from pbmt.model.sparse import SparseModel, SparseWeights, nbest_name
from pbmt.base.vocab import Vocab


def test_names_of_figure_1_like_sequence():
    # source "a b c": block [1, 3) first (N), then [0, 1) (L)
    blocks = [Block(1, 3, ("b", "c"), ("x", "y")), Block(0, 1, ("a",), ("z",))]
    names = sequence_names(blocks)
    assert names["blk:b_c|x_y"] == 1 and names["blk:a|z"] == 1
    assert names["ori:N:b_c|x_y"] == 1 and names["ori:L:a|z"] == 1
    assert names["w:b|y"] == 1 and names["w:a|z"] == 1
    assert names["len:x_y|2"] == 1
    assert names["bi:<s>|x"] == 1 and names["bi:y|z"] == 1 and names["bi:z|</s>"] == 1
    assert sum(names.values()) == 2 + 4 + 1 + 2 + 2 + 3  # blocks, word pairs, lengths, orientations, bigrams
    assert all(is_block_name(n) for n in names)


def test_names_are_unambiguous_and_whitespace_free():
    # words holding the separators: "a_b" as one word differs from the phrase "a b"; '#' would start a comment
    one, two = local_names(("a_b",), ("x|y",)), local_names(("a", "b"), ("x", "y"))
    assert one[0] != two[0] and not set(one) & set(two)
    for name in one + two + local_names(("50%", "c#", "k:v"), ("é\u00a0z",)):
        assert not any(c.isspace() for c in name) and "#" not in name and is_block_name(name)
    assert unquote(escape_word("a_b|c:d#e%f g")) == "a_b|c:d#e%f g"
    assert not is_block_name("blk:a") and not is_block_name("len:x|two") and not is_block_name("ori:Q:a|b")


def test_feature_index_vectors():
    index = FeatureIndex()
    ids, counts = index.vector(Counter({"b": 2, "a": 1}))
    assert index.names == ["b", "a"] and ids.tolist() == [0, 1] and counts.tolist() == [2.0, 1.0]
    ids, counts = index.vector(Counter({"c": 1, "a": 3}), add=False)
    assert ids.tolist() == [1] and counts.tolist() == [3.0] and len(index) == 2


def test_weights_file_round_trip_through_the_sparse_weights_file(tmp_path):
    names = local_names(("a", "b#"), ("x y",)) + ["bi:<s>|x", "w:a|x"]
    values = np.array([0.5, -1.25, 2.0, 0.0, 0.25, 0.0])
    model = SparseModel.of_blocks(BlockWeights(names, values))
    model.write(tmp_path)
    back = SparseModel.read(tmp_path)
    assert back.boundary is None and back.blocks.weight == model.blocks.weight and len(back.blocks) == 4
    assert back.blocks.weight["bi:<s>|x"] == 0.25
    assert '[sparse]\nfamilies = ["block"]' in (tmp_path / "pbmt.toml").read_text()


def test_a_weights_file_may_spell_block_names_as_n_best_lists_do(tmp_path):
    names = ["blk:a|x", "w:a|x", "len:x|1", "ori:R:a|x", "bi:<s>|x"]
    path = tmp_path / "sparse-weights.txt"
    path.write_text("".join(f"{nbest_name(n)} {k + 1}\n" for k, n in enumerate(names)) + "pb_c1_c2 0.5\n")
    read = SparseWeights.read(path)
    assert read.names == (*names, "pb_c1_c2") and read.values.tolist() == [1, 2, 3, 4, 5, 0.5]
    path.write_text("blk:a|x 0.5\nBlock_blk:a|x 0.25\n")
    with pytest.raises(FormatError, match=r"sparse-weights.txt:2: blk:a\|x already has a weight \(line 1\)"):
        SparseWeights.read(path)


@pytest.mark.parametrize("line,message", [
    ("blk:a b|x 1.0", "expected 'name value'"),
    ("blk:a|x one", "is not a number"),
    ("blk:a 1.0", "is not a feature name"),
    ("len:x|two 1.0", "is not a feature name"),
    ("Block_len:x|two 1.0", "'Block_len:x|two' is not a feature name"),
])
def test_bad_lines_of_the_weights_file_name_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "sparse-weights.txt"
    path.write_text(f"# comment\nblk:a|x 0.5\n{line}\n")
    with pytest.raises(FormatError, match=f"sparse-weights.txt:3: .*{message}"):
        SparseWeights.read(path)


def test_block_scores_of_candidates_equal_the_names_they_fire():
    """The compiled per-candidate scores (numba, id-keyed) against the string names, word by word: a table of
    three source phrases, a word first seen as an unknown input word after the weights were compiled, and
    the bigram table's sentence start and end."""
    vocab = Vocab()
    table = [(("a",), [("x",), ("x", "y", "x")]), (("a", "b"), [("x", "y")]), (("b", "a", "b"), [("y",)])]
    rng = np.random.default_rng(3)
    names = sorted({n for source, targets in table for target in targets for n in local_names(source, target)}
                   | {orient_name(k, s, t) for s, ts in table for t in ts for k in "RLN"}
                   | {"blk:q|q", "w:q|x", "len:q|1", "ori:L:q|q", "bi:<s>|x", "bi:x|</s>", "bi:y|q", "w:zz|x"})
    weights = BlockWeights(names, rng.normal(size=len(names)))
    src_offsets, src_words = [0], []
    cand_offsets, tgt_offsets, tgt_words, pairs = [0], [0], [], []
    for source, targets in table:
        src_words += vocab.ids(source).tolist()
        src_offsets.append(len(src_words))
        for target in targets:
            tgt_words += vocab.ids(target).tolist()
            tgt_offsets.append(len(tgt_words))
            pairs.append((source, target))
        cand_offsets.append(len(pairs))
    scores = BlockScores.of(weights, np.array(src_offsets), np.array(src_words), np.array(cand_offsets),
                            np.array(tgt_offsets), np.array(tgt_words), vocab)
    expected = [sum(weights.weight.get(n, 0.0) for n in local_names(s, t)) for s, t in pairs]
    np.testing.assert_allclose(scores.local, expected, atol=1e-12)
    np.testing.assert_allclose(scores.orient, [[weights.weight.get(orient_name(k, s, t), 0.0) for k in "RLN"]
                                               for s, t in pairs], atol=1e-12)
    unknown = vocab.add("q")  # an input word the table lacks, passed through as itself
    one = np.array([0, 1])
    local, orient = scores.options(np.array([2, -1, 0]), one, np.array([unknown]), one, np.array([unknown]))
    assert local[1] == pytest.approx(sum(weights.weight.get(n, 0.0) for n in local_names(("q",), ("q",))))
    assert orient[1].tolist() == [0.0, weights.weight["ori:L:q|q"], 0.0] and local[0] == scores.local[2]
    x, y = vocab.get("x"), vocab.get("y")
    pair = scores.bigrams(np.array([x, y]), np.array([x, unknown]))
    assert pair[2, 0] == weights.weight["bi:<s>|x"] and pair[0, 2] == weights.weight["bi:x|</s>"]
    assert pair[1, 1] == weights.weight["bi:y|q"] and pair[0, 0] == pair[1, 0] == 0.0
