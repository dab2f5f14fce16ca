"""Moses lexicalized reordering tables (msd-bidirectional-fe).

A line is ``src ||| tgt ||| p1 p2 p3 p4 p5 p6``: for the phrase pair, the
probabilities of monotone, swap and discontinuous orientation with respect to
the previous phrase, then with respect to the next phrase. The file has the
phrase-table format, so it is parsed and cached by ``PhraseTable``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.model._phrase_kernels import match_pairs
from pbmt.model.phrase_table import PhraseTable
from pbmt.base.vocab import Vocab

SUPPORTED_TYPES = ("wbe-msd-bidirectional-fe", "wbe-msd-bidirectional-fe-allff",
                   "msd-bidirectional-fe", "msd-bidirectional-fe-allff")
N_SCORES = 6


@dataclass(frozen=True)
class ReorderingTable:
    """Reordering log probabilities (natural log, floored at -100) per phrase pair."""

    table: PhraseTable

    @classmethod
    def load(cls, path: str | Path, vocab: Vocab, type_: str = "wbe-msd-bidirectional-fe-allff") -> "ReorderingTable":
        """Load a text reordering table (plain or gzip, cached like a phrase table)."""
        if type_ not in SUPPORTED_TYPES:
            raise PbmtError(f"reordering type {type_!r} is not supported; pbmt supports {', '.join(SUPPORTED_TYPES)}")
        return cls(PhraseTable.load(path, vocab, n_scores=N_SCORES))

    def scores_for(self, phrases: PhraseTable) -> np.ndarray:
        """Reordering scores of every candidate of ``phrases``: ``float64[n_cand, 6]``.

        A phrase pair missing from the reordering table gets zeros, as in
        Moses (its reordering feature is not applied).
        """
        return self._scores(phrases.src_offsets, phrases.src_words, phrases.cand_offsets, phrases.tgt_offsets,
                            phrases.tgt_words)

    def pair_scores(self, src_offsets: np.ndarray, src_words: np.ndarray, tgt_offsets: np.ndarray,
                    tgt_words: np.ndarray) -> np.ndarray:
        """Reordering scores of phrase pairs given as two CSRs of word ids (pair ``k``: source row ``k``,
        target row ``k``), such as the translations an input's markup gives: ``float64[k, 6]``, zeros for a
        pair the table lacks. Moses looks a given translation up in the table so too."""
        return self._scores(np.asarray(src_offsets, np.int64), np.asarray(src_words, np.int32),
                            np.arange(len(src_offsets), dtype=np.int64), np.asarray(tgt_offsets, np.int64),
                            np.asarray(tgt_words, np.int32))

    def _scores(self, src_offsets, src_words, cand_offsets, tgt_offsets, tgt_words) -> np.ndarray:
        t = self.table
        match = match_pairs(src_offsets, src_words, cand_offsets, tgt_offsets, tgt_words, t.src_word_map, t.trie_keys,
                            t.trie_values, t.n_src_words, t.node_phrase, t.cand_offsets, t.tgt_offsets, t.tgt_words)
        out = np.zeros((len(match), N_SCORES))
        found = match >= 0
        out[found] = t.scores[match[found]]
        return out
