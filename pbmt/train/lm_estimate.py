"""Interpolated modified Kneser-Ney n-gram estimation, equal to KenLM's ``lmplz``.

``estimate_kn(text, order)`` gives the model ``lmplz -o ORDER`` writes with its
default options (no pruning, interpolated unigrams); ``write_arpa`` writes it.
The estimate (Chen & Goodman 1998; Heafield et al. 2013, "Scalable Modified
Kneser-Ney Language Model Estimation"):

* Each sentence becomes ``<s> w1 ... wn </s>``; every n-gram of 1 to N words
  inside it is kept (nothing outside a sentence, no ``<s> <s>`` padding).
* Adjusted counts a(g): the raw count at the highest order N and for n-grams
  starting with ``<s>``; otherwise the continuation count, the number of
  distinct words seen just before g. The unigram ``<s>`` is never predicted:
  it has adjusted count 0 and lmplz's log10 probability 0. ``<unk>`` is never
  seen: adjusted count 0.
* Three discounts per order from that order's counts of adjusted counts
  t1..t4 (over all its n-grams, those starting with ``<s>`` included): Y = t1 / (t1 + 2 t2), D_j = j - (j + 1) Y t_{j+1} / t_j, j = 1, 2, 3
  (D_3 for a >= 3).
* p(w | h) = (a(hw) - D(a(hw))) / S(h) + gamma(h) p(w | h') with h' = h
  without its first word, S(h) = sum_x a(hx) and
  gamma(h) = (D_1 N_1(h) + D_2 N_2(h) + D_3 N_3+(h)) / S(h), N_j(h) the number
  of words x with a(hx) = j (N_3+: >= 3). The unigram level interpolates with
  the uniform distribution over the vocabulary except ``<s>``: p(<unk>) is
  gamma() / (V - 1) for V word types including ``<unk>``, ``<s>``, ``</s>``.
* The ARPA backoff weight of h is gamma(h); n-grams that are no context (those
  ending in ``</s>``, and ``<unk>``) get backoff 0, written like lmplz does.

Checked against lmplz's own output on the shared Bible corpus: equal to 1e-6
in log10 for orders 3 and 5 (tests/train/test_lm_estimate.py,
benchmarks/bench_lm_estimate.py).

Degenerate data. The closed-form discounts need t1, t2, t3 > 0 and give
D_j in [0, j] only on natural text. Like lmplz, ``estimate_kn`` refuses
otherwise, with lmplz's diagnosis; ``discount_fallback=(0.5, 1.0, 1.5)`` (the
command line's ``--discount-fallback``) mirrors lmplz's ``--discount_fallback``:
every order whose closed-form estimate fails uses the given discounts instead,
with a warning.

Counting works on integer arrays: an n-gram of order k is identified by the
id of its first k-1 words and its last word, so one ``np.unique`` over int64
keys per order finds the n-grams of a whole corpus and the id of the n-gram
starting at every token position.
"""

from __future__ import annotations

import os
import warnings
from array import array
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from pbmt.errors import FormatError, PbmtError
from pbmt.files import atomic_write, read_lines
from pbmt.vocab import BOS, EOS, SPECIAL_WORDS, Vocab

#: lmplz's ``--discount_fallback`` default: discounts for adjusted counts 1, 2, 3+.
DEFAULT_FALLBACK = (0.5, 1.0, 1.5)

_WRITE_CHUNK = 1 << 16  # ARPA lines formatted at a time


@dataclass(frozen=True)
class ArpaModel:
    """A backoff n-gram model as an ARPA file holds it, log10 throughout.

    ``words[i]`` is the word with id ``i`` (ids 0, 1, 2 = ``<unk>``, ``<s>``,
    ``</s>``, as in ``pbmt.vocab``). For order k = 1..N (index k - 1):

    * ``ngrams[k-1]``: int32 ``(n_k, k)`` word ids. Order 1 lists every word
      id in id order; higher orders are sorted lexicographically by id.
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


@dataclass(frozen=True)
class _Level:
    """The n-grams of one order k, each with its raw count.

    ``context``: index of the n-gram's first k - 1 words at order k - 1 (0, the
    empty context, at order 1); ``lower``: index of its last k - 1 words at
    order k - 1 (unused at order 1); ``first``/``last``: first and last word id.
    """

    context: np.ndarray
    lower: np.ndarray
    first: np.ndarray
    last: np.ndarray
    count: np.ndarray


def estimate_kn(
    sentences: str | os.PathLike | Iterable[Sequence[str]],
    order: int,
    discount_fallback: tuple[float, float, float] | None = None,
) -> ArpaModel:
    """Estimate an interpolated modified Kneser-Ney model, as ``lmplz -o order``.

    ``sentences`` is a tokenised text file (one sentence a line, tokens
    separated by white space, plain or ``.gz``) or an iterable of token
    sequences. ``<s>``/``</s>`` are added around each sentence; the words
    ``<unk>``, ``<s>`` and ``</s>`` must not occur in the text (FormatError
    naming the line, as lmplz refuses them too). Probabilities and backoffs are
    log10 (see ``ArpaModel``).

    ``discount_fallback``: ``None`` raises PbmtError when an order's
    closed-form discounts cannot be computed or fall outside [0, j] (tiny or
    artificial corpora); three discounts (D_1, D_2, D_3+; lmplz's default
    fallback is ``DEFAULT_FALLBACK``) are used instead for such orders, with a
    ``UserWarning``.
    """
    if order < 1:
        raise PbmtError(f"the n-gram order must be at least 1, got {order}")
    if discount_fallback is not None:
        discount_fallback = _check_fallback(discount_fallback)
    words, stream, sentence_end = _read_stream(sentences)
    levels = _count_ngrams(stream, sentence_end, len(words), order)
    del stream, sentence_end
    adjusted = _adjusted_counts(levels)
    discounts = np.empty((order, 3))
    for k, a in enumerate(adjusted, 1):
        discounts[k - 1] = _discounts(k, a, discount_fallback)

    ngrams = [levels[0].last[:, None].astype(np.int32)]
    log10_prob, log10_backoff = [], []
    lower_prob = None
    for k, (level, a, d) in enumerate(zip(levels, adjusted, discounts), 1):
        n_contexts = 1 if k == 1 else len(levels[k - 2].count)
        weight, gamma = _interpolation_weights(level.context, a, d, n_contexts)
        prob = (a - np.concatenate(([0.0], d))[np.minimum(a, 3)]) * weight[level.context]
        if k == 1:
            # the uniform distribution is over the words that can be predicted: all but <s>
            prob += gamma[0] / (len(words) - 1)
        else:
            prob += gamma[level.context] * lower_prob[level.lower]
            log10_backoff.append(np.log10(gamma, out=np.zeros_like(gamma), where=weight > 0))
            ngrams.append(np.column_stack([ngrams[-1][level.context], level.last.astype(np.int32)]))
        lower_prob = prob
        log10_prob.append(np.log10(prob))
    log10_prob[0][BOS] = 0.0
    return ArpaModel(
        words=words,
        ngrams=tuple(ngrams),
        log10_prob=tuple(log10_prob),
        log10_backoff=tuple(log10_backoff),
        discounts=discounts,
    )


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


def _check_fallback(discounts: Sequence[float]) -> tuple[float, float, float]:
    if len(discounts) != 3:
        raise PbmtError(
            f"discount fallback needs three discounts (adjusted counts 1, 2, 3+), got {list(discounts)}"
        )
    for j, d in enumerate(discounts, 1):
        if not 0.0 < d <= j:
            raise PbmtError(f"fallback discount for adjusted count {j} must be in (0, {j}], got {d}")
    return (float(discounts[0]), float(discounts[1]), float(discounts[2]))


def _read_stream(
    sentences: str | os.PathLike | Iterable[Sequence[str]],
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Words by id, the token ids of ``<s> sentence </s>`` for every sentence
    concatenated (int64 ``(T,)``), and the position of the ``</s>`` closing the
    sentence of each position (int64 ``(T,)``)."""
    # words become ids as they are read: memory holds 4 bytes a token, not strings
    vocab = Vocab()
    token_ids, lengths = array("i"), array("q")
    if isinstance(sentences, (str, os.PathLike)):
        source = str(sentences)
        for _, line in read_lines(sentences):
            sentence = line.split()
            token_ids.extend(map(vocab.add, sentence))
            lengths.append(len(sentence))
    else:
        source = "<sentences>"
        for sentence in sentences:
            if isinstance(sentence, str):
                raise TypeError("each sentence must be a sequence of tokens, not a string")
            token_ids.extend(map(vocab.add, sentence))
            lengths.append(len(sentence))
    if not lengths:
        raise PbmtError(f"{source}: no sentences to estimate a language model from")

    ids = np.frombuffer(token_ids, dtype=np.int32).astype(np.int64)
    del token_ids
    words = tuple(vocab.words(range(len(vocab))))
    bad_word = np.array(
        [i < len(SPECIAL_WORDS) or not w or len(w.split()) != 1 for i, w in enumerate(words)]
    )
    bad = np.flatnonzero(bad_word[ids])
    if bad.size:
        line = int(np.searchsorted(np.cumsum(lengths), bad[0], side="right")) + 1
        word = words[ids[bad[0]]]
        if word in SPECIAL_WORDS:
            why = "sentence boundaries are added automatically and <unk> is never seen"
            raise FormatError(source, line, f"the special word {word} is not allowed in the text ({why})")
        raise FormatError(source, line, f"token {word!r} is empty or contains white space")

    lengths_arr = np.array(lengths, dtype=np.int64) + 2
    ends = np.cumsum(lengths_arr) - 1
    starts = ends - lengths_arr + 1
    stream = np.empty(int(ends[-1]) + 1, dtype=np.int64)
    inner = np.ones(len(stream), dtype=bool)
    inner[starts] = inner[ends] = False
    stream[inner] = ids
    stream[starts] = BOS
    stream[ends] = EOS
    return words, stream, np.repeat(ends, lengths_arr)


def _count_ngrams(stream: np.ndarray, sentence_end: np.ndarray, n_words: int, order: int) -> list[_Level]:
    """The n-grams of orders 1..order inside the sentences of ``stream``.

    At order k every n-gram is the key ``id(first k-1 words) * n_words + last
    word``; ``at[p]`` is the id of the k-gram starting at position ``p`` (-1
    where it would cross the end of the sentence).
    """
    words = np.arange(n_words, dtype=np.int64)
    levels = [
        _Level(
            context=np.zeros(n_words, dtype=np.int64),
            lower=np.zeros(0, dtype=np.int64),
            first=words,
            last=words,
            count=np.bincount(stream, minlength=n_words),
        )
    ]
    at = stream
    positions = np.arange(len(stream))
    for k in range(2, order + 1):
        positions = positions[positions + k - 1 <= sentence_end[positions]]
        keys = at[positions] * n_words + stream[positions + k - 1]
        unique, first_seen, inverse = np.unique(keys, return_index=True, return_inverse=True)
        context = unique // n_words
        levels.append(
            _Level(
                context=context,
                lower=at[positions[first_seen] + 1],
                first=levels[-1].first[context],
                last=unique % n_words,
                count=np.bincount(inverse, minlength=len(unique)),
            )
        )
        at = np.full(len(stream), -1, dtype=np.int64)
        at[positions] = inverse
    return levels


def _adjusted_counts(levels: list[_Level]) -> list[np.ndarray]:
    """Kneser-Ney adjusted counts of every n-gram (int64, one array per order)."""
    adjusted = []
    for k, level in enumerate(levels, 1):
        if k == len(levels):
            a = level.count.copy()
        else:
            a = np.bincount(levels[k].lower, minlength=len(level.count))
            starts_sentence = level.first == BOS
            a[starts_sentence] = level.count[starts_sentence]
        adjusted.append(a)
    adjusted[0][BOS] = 0
    return adjusted


def _discounts(
    k: int, adjusted: np.ndarray, fallback: tuple[float, float, float] | None
) -> tuple[float, float, float]:
    """Closed-form discounts D_1, D_2, D_3+ of order ``k`` from its adjusted counts."""
    t = np.bincount(adjusted, minlength=5)[1:5].astype(np.float64)
    missing = np.flatnonzero(t[:3] == 0)
    if missing.size:
        problem = (
            f"cannot compute the Kneser-Ney discounts of {k}-grams: no {k}-gram has adjusted "
            f"count {missing[0] + 1} (counts of adjusted counts 1-4: {t.astype(int).tolist()})"
        )
    else:
        y = t[0] / (t[0] + 2 * t[1])
        d = tuple(float(j - (j + 1) * y * t[j] / t[j - 1]) for j in (1, 2, 3))
        outside = [j for j in (1, 2, 3) if not 0.0 <= d[j - 1] <= j]
        if not outside:
            return d
        j = outside[0]
        problem = f"the {k}-gram discount for adjusted count {j} is out of range [0, {j}]: {d[j - 1]:.6g}"
    problem += "; modified Kneser-Ney expects natural text (is the corpus tiny, artificial or duplicated?)"
    if fallback is None:
        raise PbmtError(
            f"{problem}. To use fixed discounts instead, as lmplz's --discount_fallback does, pass "
            f"--discount-fallback (estimate_kn(..., discount_fallback={DEFAULT_FALLBACK}))"
        )
    warnings.warn(f"{problem}; using the fallback discounts {fallback}", stacklevel=3)
    return fallback


def _interpolation_weights(
    context: np.ndarray, adjusted: np.ndarray, discounts: np.ndarray, n_contexts: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per context (float64 ``(n_contexts,)``): 1 / S(h), and gamma(h) (0 where S(h) = 0)."""
    total = np.bincount(context, weights=adjusted, minlength=n_contexts)
    n_by_class = np.bincount(
        context * 4 + np.minimum(adjusted, 3), minlength=4 * n_contexts
    ).reshape(n_contexts, 4)
    seen = total > 0
    weight = np.divide(1.0, total, out=np.zeros(n_contexts), where=seen)
    return weight, (n_by_class[:, 1:] @ discounts) * weight
