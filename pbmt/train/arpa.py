"""A backoff n-gram model as an ARPA file holds it, and the file written as lmplz writes it."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from pbmt.base.files import atomic_write

_WRITE_CHUNK = 1 << 16  # ARPA lines formatted at a time


@dataclass(frozen=True)
class ArpaModel:
    """A backoff n-gram model as an ARPA file holds it, log10 throughout.

    ``words[i]`` is the word with id ``i`` (ids 0, 1, 2 = ``<unk>``, ``<s>``,
    ``</s>``, as in ``pbmt.base.vocab``). For order k = 1..N (index k - 1):

    * ``ngrams[k-1]``: integer ``(n_k, k)`` word ids (int32 from
      ``estimate_kn``; big-endian uint32 memory-mapped while ``write_lm``
      writes). Order 1 lists every word id in id order; higher orders are
      sorted lexicographically by id.
    * ``log10_prob[k-1]``: float64 ``(n_k,)``, log10 p(last word | the others).
    * ``log10_backoff[k-1]`` (k < N only, so N - 1 arrays): float64 ``(n_k,)``,
      log10 of the backoff weight of the n-gram as a context (0 if it is none).
    * ``discounts``: float64 ``(N, 3)``, the discounts D_1, D_2, D_3+ of each
      order, on adjusted counts (not logs).
    """

    words: tuple[str, ...]
    ngrams: tuple[np.ndarray, ...]
    log10_prob: tuple[np.ndarray, ...]
    log10_backoff: tuple[np.ndarray, ...]
    discounts: np.ndarray

    @property
    def order(self) -> int:
        """The highest n-gram order N."""
        return len(self.ngrams)



def write_arpa(model: ArpaModel, path: str | os.PathLike) -> None:
    """Write ``model`` as an ARPA file, gzip-compressed when ``path`` ends in ``.gz``.

    Standard layout (``\\data\\``, ``ngram k=count``, ``\\k-grams:`` sections,
    ``\\end\\``), tab-separated ``log10 prob``, n-gram and, below the highest
    order, ``log10 backoff`` (0 included, as lmplz writes it), 8 significant
    digits. The write is atomic.
    """
    words = np.array(model.words, dtype=object)
    with atomic_write(path, "wb") as out:
        header = ["\\data\\"] + [f"ngram {k}={len(g)}" for k, g in enumerate(model.ngrams, 1)]
        out.write(("\n".join(header) + "\n").encode())
        for k, ids in enumerate(model.ngrams, 1):
            out.write(f"\n\\{k}-grams:\n".encode())
            backoff = model.log10_backoff[k - 1] if k < model.order else None
            for lo in range(0, len(ids), _WRITE_CHUNK):
                hi = lo + _WRITE_CHUNK
                grams = map(" ".join, zip(*(words[ids[lo:hi, j]].tolist() for j in range(k))))
                # + 0.0 turns -0.0 into 0.0
                probs = (model.log10_prob[k - 1][lo:hi] + 0.0).tolist()
                if backoff is None:
                    lines = [f"{p:.8g}\t{g}\n" for p, g in zip(probs, grams)]
                else:
                    backs = (backoff[lo:hi] + 0.0).tolist()
                    lines = [f"{p:.8g}\t{g}\t{b:.8g}\n" for p, g, b in zip(probs, grams, backs)]
                out.write("".join(lines).encode())
        out.write(b"\n\\end\\\n")
