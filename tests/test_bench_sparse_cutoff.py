"""benchmarks/bench_sparse_cutoff.py: the run's first weights read from its log, and a half of a pool."""

import importlib.util
from pathlib import Path

import numpy as np
import scipy.sparse

from pbmt.model.features import FeatureLayout
from pbmt.tune.pool import Pool

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sparse_cutoff.py"
spec = importlib.util.spec_from_file_location("benchmarks_bench_sparse_cutoff", BENCH)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _pool() -> Pool:
    layout = FeatureLayout(("LM0", "TM0"), ("", ""), (1, 2))
    offsets = np.array([0, 2, 3, 6], dtype=np.int64)
    sparse = scipy.sparse.csr_matrix(np.arange(12, dtype=float).reshape(6, 2) % 3)
    return Pool(layout, np.arange(18, dtype=float).reshape(6, 3), np.arange(60).reshape(6, 10), offsets,
                np.arange(6, dtype=np.uint64), tuple("abcdef"), sparse, ("s_a", "s_b"))


def test_the_first_decodes_weights_are_read_in_the_pools_column_order(tmp_path):
    log = tmp_path / "log.tsv"
    log.write_text("iteration\tdecoded_weights\tdev_bleu\n1\tTM0= 0.2 -0.5 LM0= 0.5\t38.5\n"
                   "2\tTM0= 1 1 LM0= 1\t39\n", encoding="utf-8")
    assert bench.first_weights(log, _pool()).tolist() == [0.5, 0.2, -0.5]


def test_a_half_holds_its_sentences_candidates_alone():
    pool = _pool()
    odd = bench.half(pool, np.array([0, 2]))
    assert odd.offsets.tolist() == [0, 2, 5] and odd.features.tolist() == pool.features[[0, 1, 3, 4, 5]].tolist()
    assert odd.sparse.toarray().tolist() == pool.sparse.toarray()[[0, 1, 3, 4, 5]].tolist()
    assert odd.stats.tolist() == pool.stats[[0, 1, 3, 4, 5]].tolist() and odd.sparse_names == pool.sparse_names
