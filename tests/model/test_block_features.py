"""Binary block features: names, ids, escaping, weight files (the decoder with them: tests/search/test_mon_swap.py)."""

from collections import Counter
from urllib.parse import unquote

import numpy as np
import pytest

from pbmt.errors import FormatError
from pbmt.model.block_features import (Block, BlockWeights, FeatureIndex, escape_word, is_block_name, local_names,
                                       sequence_names)
from pbmt.model.sparse import SparseModel, SparseWeights


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
    assert back.blocks.bigrams["<s>"] == {"x": 0.25}
    assert '[sparse]\nfamilies = ["block"]' in (tmp_path / "pbmt.toml").read_text()


@pytest.mark.parametrize("line,message", [
    ("blk:a b|x 1.0", "expected 'name value'"),
    ("blk:a|x one", "is not a number"),
    ("blk:a 1.0", "is not a feature name"),
    ("len:x|two 1.0", "is not a feature name"),
])
def test_bad_lines_of_the_weights_file_name_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "sparse-weights.txt"
    path.write_text(f"# comment\nblk:a|x 0.5\n{line}\n")
    with pytest.raises(FormatError, match=f"sparse-weights.txt:3: .*{message}"):
        SparseWeights.read(path)
