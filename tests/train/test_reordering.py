"""Lexicalized reordering (wbe msd-bidirectional-fe): pbmt's table equals
Moses's (shared model/), and its probabilities are the smoothed relative
frequencies of the orientation counts."""

import numpy as np

from pbmt.base.files import read_lines
from pbmt.train.score import reordering_probabilities, write_reordering_table


def lines(path):
    return [line for _, line in read_lines(path)]


def test_reordering_table_equals_moses(bible, bible_table_for_dev_test, moses_reordering_table, tmp_path):
    expected = np.array([[float(x) for x in f[2].split()] for f in moses_reordering_table])
    assert expected.shape == (370_384, 6)
    np.testing.assert_allclose(bible_table_for_dev_test.reordering, expected, rtol=1e-4, atol=0)
    path = tmp_path / "reordering-table.gz"
    write_reordering_table(path, bible_table_for_dev_test)
    assert lines(path) == lines(bible / "model" / "reordering-table.gz")  # byte for byte, in Moses's order


def test_smoothed_relative_frequencies():
    counts = np.array([[1, 0, 0, 0, 0, 1], [3, 1, 0, 2, 2, 0], [0, 0, 0, 0, 0, 0]])
    got = reordering_probabilities(counts, smoothing=0.5)
    # (count + 0.5) / (total + 1.5) for previous and next separately
    np.testing.assert_allclose(got[0], [0.6, 0.2, 0.2, 0.2, 0.2, 0.6])
    np.testing.assert_allclose(got[1], [3.5 / 5.5, 1.5 / 5.5, 0.5 / 5.5, 2.5 / 5.5, 2.5 / 5.5, 0.5 / 5.5])
    np.testing.assert_allclose(got[2], [1 / 3] * 6)
