"""Binary block features: names, ids, weight files (the decoder with them: tests/search/test_mon_swap.py)."""

from collections import Counter

import numpy as np

from pbmt.tune.block_features import Block, BlockWeights, FeatureIndex, blocks_of, sequence_names


def test_names_of_figure_1_like_sequence():
    # source "a b c": block [1, 3) first (N), then [0, 1) (L)
    blocks = [Block(1, 3, ("b", "c"), ("x", "y")), Block(0, 1, ("a",), ("z",))]
    names = sequence_names(blocks)
    assert names["blk:b c ||| x y"] == 1 and names["blk:a ||| z"] == 1
    assert names["ori:N:b c ||| x y"] == 1 and names["ori:L:a ||| z"] == 1
    assert names["w:b ||| y"] == 1 and names["w:a ||| z"] == 1
    assert names["len:x y ||| 2"] == 1
    assert names["bi:<s> x"] == 1 and names["bi:y z"] == 1 and names["bi:z </s>"] == 1
    assert sum(names.values()) == 2 + 4 + 1 + 2 + 2 + 3  # blocks, word pairs, lengths, orientations, bigrams
    assert blocks_of(["a", "b", "c"], ["x", "y", "z"], [(1, 3, 0, 2), (0, 1, 2, 3)]) == blocks


def test_feature_index_vectors():
    index = FeatureIndex()
    ids, counts = index.vector(Counter({"b": 2, "a": 1}))
    assert index.names == ["b", "a"] and ids.tolist() == [0, 1] and counts.tolist() == [2.0, 1.0]
    ids, counts = index.vector(Counter({"c": 1, "a": 3}), add=False)
    assert ids.tolist() == [1] and counts.tolist() == [3.0] and len(index) == 2


def test_weights_file_round_trip(tmp_path):
    weights = BlockWeights(["blk:a b ||| x", "bi:<s> x", "w:a ||| x"], np.array([0.5, -1.25, 0.0]))
    weights.write(tmp_path / "w.txt")
    back = BlockWeights.read(tmp_path / "w.txt")
    assert back.weight == {"blk:a b ||| x": 0.5, "bi:<s> x": -1.25}
    assert back.bigrams["<s>"] == {"x": -1.25}
