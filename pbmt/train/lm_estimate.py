"""Interpolated modified Kneser-Ney n-gram estimation, equal to KenLM's ``lmplz``.

``estimate_kn(text, order)`` gives the model ``lmplz -o ORDER`` writes with its
default options (no pruning, interpolated unigrams), in memory; ``pbmt.train.arpa``
writes it; ``write_lm(text, order, path, memory=...)`` estimates and writes a
model of any size in bounded memory (what ``pbmt lm`` and ``pbmt train`` do).
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

How it runs in bounded memory (lmplz's design, Heafield et al. 2013): the
text is read once, a buffer of sentences at a time, into sorted runs on disk
(``pbmt.train.runs``) of its N-grams with counts and of its sentence prefixes
(the n-grams starting with ``<s>``, whose adjusted count is their raw count);
a k-way merge sums them into the N-gram level, a file of distinct N-grams in
lexicographic order of their word ids. Each lower level k is the merge of the
suffixes of level k + 1's n-grams (each one distinct word before it: the
continuation count) with the prefix runs of order k. Discounts are one pass
over each level; probabilities a second one, in blocks of whole contexts
(S(h), N_j(h) and gamma(h) within the block), taking the lower order's
probability by binary search in the level below, already written to disk.
``memory`` bounds the buffers of all these passes (the vocabulary, one entry
per word type, comes on top); the result does not depend on it.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import tempfile
import warnings
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
from tqdm import tqdm

from pbmt.model import MAX_ORDER
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import Outputs, left_clean_on_failure, output_target, process_running, read_lines
from pbmt.train.arpa import ArpaModel, write_arpa
from pbmt.train.runs import group_starts, key_bytes, merge_runs, run_length, write_run
from pbmt.base.vocab import BOS, EOS, SPECIAL_WORDS, Vocab

#: lmplz's ``--discount_fallback`` default: discounts for adjusted counts 1, 2, 3+.
DEFAULT_FALLBACK = (0.5, 1.0, 1.5)

#: The in-memory buffer of the estimation when none is given (``--memory``), bytes.
DEFAULT_MEMORY = 1 << 30

#: Fewest rows a buffer holds, whatever the budget: a run per sentence at worst.
_MIN_ROWS = 64

#: A word id in a key: big-endian, so that bytewise key order is id order.
_ID = np.dtype(">u4")

_SIZE = re.compile(r"(\d+(?:\.\d*)?)([bkmgtp%]?)", re.IGNORECASE)


def parse_memory(text: str) -> int:
    """Bytes of a memory size written as lmplz's ``-S`` (and Unix ``sort -S``)
    takes it: a number with a suffix ``b`` (bytes), ``K``, ``M``, ``G``, ``T``
    (powers of 1024) or ``%`` (of the physical memory); no suffix means K.
    ValueError for anything else, a size under 1 KiB or one above the physical memory (buffers that size could
    not be held)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"memory size {text!r} is not a number with a suffix b, K, M, G, T or % (e.g. 2G, 80%)")
    number, suffix = float(match.group(1)), match.group(2).lower()
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if suffix == "%":
        size = number / 100 * physical
    else:
        size = number * 1024 ** "bkmgtp".index(suffix or "k")
    if size < 1024:
        raise ValueError(f"memory size {text!r} is under 1K")
    if size > physical:
        raise ValueError(f"memory size {text!r} is more than this machine's physical memory "
                         f"({physical / 1024 ** 3:.1f}G; 100% is all of it)")
    return int(size)


def memory_size(text: str) -> int:
    """``parse_memory`` as an argparse ``type``: a bad size is a usage error."""
    try:
        return parse_memory(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


@dataclass(frozen=True)
class LmCounts:
    """What ``write_lm`` wrote: the number of word types (``<unk>``, ``<s>``,
    ``</s>`` included), of n-grams of each order 1..N, and the discounts
    (float64 ``(N, 3)``, as ``ArpaModel.discounts``)."""

    words: int
    ngrams: tuple[int, ...]
    discounts: np.ndarray


def estimate_kn(
    sentences: str | os.PathLike | Iterable[Sequence[str]],
    order: int,
    discount_fallback: tuple[float, float, float] | None = None,
    memory: int = DEFAULT_MEMORY,
) -> ArpaModel:
    """Estimate an interpolated modified Kneser-Ney model, as ``lmplz -o order``,
    and return it in memory (``write_lm`` writes a model as large as the disk).

    ``sentences`` is a tokenised text file (one sentence a line, tokens
    separated by white space, plain or ``.gz``) or an iterable of token
    sequences. ``<s>``/``</s>`` are added around each sentence; the words
    ``<unk>``, ``<s>`` and ``</s>`` must not occur in the text (FormatError
    naming the line, as lmplz refuses them too). Probabilities and backoffs are
    log10 (see ``ArpaModel``). ``memory``: bytes of buffers, as in ``write_lm``;
    the model does not depend on it.

    ``discount_fallback``: ``None`` raises PbmtError when an order's
    closed-form discounts cannot be computed or fall outside [0, j] (tiny or
    artificial corpora); three discounts (D_1, D_2, D_3+; lmplz's default
    fallback is ``DEFAULT_FALLBACK``) are used instead for such orders, with a
    ``UserWarning``.
    """
    with _scratch(None) as folder:
        model = _estimate(sentences, order, discount_fallback, memory, folder)
        return ArpaModel(
            words=model.words,
            ngrams=tuple(np.array(g, dtype=np.int32) for g in model.ngrams),
            log10_prob=tuple(np.array(p) for p in model.log10_prob),
            log10_backoff=tuple(np.array(b) for b in model.log10_backoff),
            discounts=model.discounts,
        )


def write_lm(
    sentences: str | os.PathLike | Iterable[Sequence[str]],
    order: int,
    path: str | os.PathLike,
    discount_fallback: tuple[float, float, float] | None = None,
    memory: int = DEFAULT_MEMORY,
    work: str | os.PathLike | None = None,
    progress: bool = False,
) -> LmCounts:
    """Estimate as ``estimate_kn`` does and write the model as ARPA to ``path``
    (``write_arpa``), holding at most about ``memory`` bytes of counts at a
    time (plus the vocabulary). The counts go to a temporary folder in
    ``work`` (default: beside ``path``, or the system's temporary folder when
    ``path`` is no regular file), removed at the end. ``path`` naming the text it reads is a UsageError, before
    anything is estimated. A failed run leaves no folder it made."""
    target, regular = output_target(path)
    with left_clean_on_failure(*([target.parent] if regular else []), *([work] if work is not None else [])):
        if isinstance(sentences, (str, os.PathLike)):
            with Outputs([sentences]) as outputs:
                outputs.claim([path])
        if work is not None:
            os.makedirs(work, exist_ok=True)
        else:
            work = target.parent if regular else None  # standard output, a pipe: the system's temporary folder
            if work is not None and not work.is_dir():
                raise PbmtError(f"{path}: cannot write: no folder {work}")
        with _scratch(work) as folder:
            model = _estimate(sentences, order, discount_fallback, memory, folder, progress)
            write_arpa(model, path)
            return LmCounts(len(model.words), tuple(len(g) for g in model.ngrams), model.discounts)


def _check_fallback(discounts: Sequence[float]) -> tuple[float, float, float]:
    if len(discounts) != 3:
        raise PbmtError(
            f"discount fallback needs three discounts (adjusted counts 1, 2, 3+), got {list(discounts)}"
        )
    for j, d in enumerate(discounts, 1):
        if not 0.0 < d <= j:
            raise PbmtError(f"fallback discount for adjusted count {j} must be in (0, {j}], got {d}")
    return (float(discounts[0]), float(discounts[1]), float(discounts[2]))


_SCRATCH = ".pbmt-lm-"


@contextmanager
def _scratch(parent: str | os.PathLike | None) -> Iterator[Path]:
    """A new temporary folder in ``parent`` (None: the system's), removed at the end. Its name carries this
    process's id, so that the folders of runs killed outright (``kill -9``, the kernel's out-of-memory killer),
    which could not remove theirs, are removed here when their process no longer runs."""
    base = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    for stale in base.glob(f"{_SCRATCH}*"):
        pid = stale.name[len(_SCRATCH):].partition("-")[0]
        if pid.isdigit() and not process_running(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{_SCRATCH}{os.getpid()}-", dir=base))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _record(k: int) -> np.dtype:
    """A counted k-gram: its word ids as a big-endian key, and a count."""
    return np.dtype([("key", f"S{4 * k}"), ("count", "<i8")])


def _ids(keys: np.ndarray, k: int) -> np.ndarray:
    """Word ids (int64 ``(n, k)``) of k-gram keys."""
    return np.frombuffer(np.ascontiguousarray(keys).tobytes(), dtype=_ID).reshape(-1, k).astype(np.int64)


def _counted(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Records of the distinct rows of ``ids`` (``(n, k)`` word ids) in key
    order, each with the sum of its rows' ``counts``."""
    k = ids.shape[1]
    bits = max(1, int(ids.max(initial=0)).bit_length())
    if k * bits <= 63:
        # the ids packed into one integer sort much faster than lexsort's k passes
        packed = np.zeros(len(ids), dtype=np.int64)
        for j in range(k):
            packed <<= bits
            packed |= ids[:, j]
        order = np.argsort(packed)
        del packed
    else:
        order = np.lexsort(ids.T[::-1])
    keys = np.ascontiguousarray(ids[order], dtype=_ID).view(f"S{4 * k}").ravel()
    starts = group_starts(keys)
    out = np.empty(len(starts), dtype=_record(k))
    out["key"] = keys[starts]
    if len(starts):
        out["count"] = np.add.reduceat(counts[order], starts)
    return out


def _load(path: Path, dtype: np.dtype | str, shape: tuple[int, ...] = ()) -> np.ndarray:
    """The file ``path`` memory-mapped as an array of ``dtype`` rows of ``shape``."""
    dtype = np.dtype(dtype)
    size = os.path.getsize(path)
    if size == 0:
        return np.zeros((0, *shape), dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r").reshape(-1, *shape)


class _Runs:
    """Buffers of sentences turned into runs: every ``order``-gram, and the
    sentence prefixes of orders 1 .. order - 1, counted, one run per buffer."""

    def __init__(self, folder: Path, order: int):
        self.folder, self.order = folder, order
        self.paths: dict[int, list[Path]] = {k: [] for k in range(1, order + 1)}

    def add(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Count the sentences of ``ids`` (int32 tokens, concatenated) of ``lengths`` words."""
        padded = lengths + 2
        ends = np.cumsum(padded) - 1
        starts = ends - padded + 1
        stream = np.empty(int(ends[-1]) + 1, dtype=np.int64)
        inner = np.ones(len(stream), dtype=bool)
        inner[starts] = inner[ends] = False
        stream[inner] = ids
        stream[starts] = BOS
        stream[ends] = EOS
        n = self.order
        sentence_end = np.repeat(ends, padded)
        positions = np.flatnonzero(np.arange(len(stream)) + n - 1 <= sentence_end)
        del sentence_end
        self._write(n, np.column_stack([stream[positions + j] for j in range(n)]))
        for k in range(1, n):
            prefix = starts[padded >= k]
            self._write(k, np.column_stack([stream[prefix + j] for j in range(k)]))

    def _write(self, k: int, ids: np.ndarray) -> None:
        path = self.folder / f"count{k}.{len(self.paths[k])}"
        write_run(path, _counted(ids, np.ones(len(ids), dtype=np.int64)))
        self.paths[k].append(path)


def _read(sentences, runs: _Runs, chunk_tokens: int, progress: bool) -> tuple[str, ...]:
    """Read the text into ``runs``, ``chunk_tokens`` tokens a buffer; the words by id.

    Words become ids as they are read, and a buffer's ids are checked for
    the special words and (from token lists) empty or spaced tokens, naming
    the first such line.
    """
    vocab = Vocab()
    bad_word = [True] * len(SPECIAL_WORDS)
    token_ids, lengths = array("i"), array("q")
    first_line = 1
    if isinstance(sentences, (str, os.PathLike)):
        source = str(sentences)
        numbered = read_lines(sentences)
        first = next(numbered, None)  # a missing file fails here, before the progress bar starts
        lines = (line.split() for _, line in itertools.chain([first] if first else [], numbered))
    else:
        source = "<sentences>"
        lines = iter(sentences)

    def flush() -> None:
        nonlocal first_line, token_ids, lengths
        words = vocab.words(range(len(bad_word), len(vocab)))
        bad_word.extend(not w or len(w.split()) != 1 for w in words)
        ids = np.frombuffer(token_ids, dtype=np.int32)
        bad = np.flatnonzero(np.array(bad_word)[ids])
        if bad.size:
            line = first_line + int(np.searchsorted(np.cumsum(lengths), bad[0], side="right"))
            word = vocab.word(int(ids[bad[0]]))
            if word in SPECIAL_WORDS:
                why = "sentence boundaries are added automatically and <unk> is never seen"
                raise FormatError(source, line, f"the special word {word} is not allowed in the text ({why})")
            raise FormatError(source, line, f"token {word!r} is empty or contains white space")
        runs.add(ids, np.array(lengths, dtype=np.int64))
        first_line += len(lengths)
        token_ids, lengths = array("i"), array("q")

    for sentence in tqdm(lines, desc="lm: counting", unit=" lines", disable=not progress or None, leave=False):
        if isinstance(sentence, str):
            raise TypeError("each sentence must be a sequence of tokens, not a string")
        token_ids.extend(map(vocab.add, sentence))
        lengths.append(len(sentence))
        if len(token_ids) >= chunk_tokens:
            flush()
    if lengths:
        flush()
    if first_line == 1:
        raise PbmtError(f"{source}: no sentences to estimate a language model from")
    return tuple(vocab.words(range(len(vocab))))


def _merge(paths: list[Path], k: int, out: Path, rows: int) -> None:
    """Merge the runs ``paths`` of k-gram records into one, summing the counts of equal keys."""
    if len(paths) == 1:
        os.replace(paths[0], out)
        return
    dtype = _record(k)
    with open(out, "wb") as handle:
        for block in merge_runs(paths, dtype, 4 * k, rows):
            starts = group_starts(block["key"])
            summed = np.empty(len(starts), dtype=dtype)
            summed["key"] = block["key"][starts]
            summed["count"] = np.add.reduceat(block["count"], starts)
            handle.write(summed.tobytes())
    for path in paths:
        os.remove(path)


def _levels(runs: _Runs, folder: Path, rows: int, progress: bool) -> list[Path]:
    """Files of the n-grams of each order 1..N with their adjusted counts, in key order.

    The top order's are its raw counts. Below, an n-gram's adjusted count is
    the number of distinct words before it, one for each n-gram of the level
    above that ends in it, or, for the n-grams starting with ``<s>`` (which
    nothing precedes), their raw count: the prefix runs.
    """
    n = runs.order
    levels = {n: folder / f"level{n}"}
    _merge(runs.paths[n], n, levels[n], rows)
    for k in tqdm(range(n - 1, 0, -1), desc="lm: merging", unit=" orders", disable=not progress or None, leave=False):
        above = _record(k + 1)
        paths = list(runs.paths[k])
        total = run_length(levels[k + 1], above)
        with open(levels[k + 1], "rb") as handle:
            for start in range(0, total, rows):
                block = np.fromfile(handle, dtype=above, count=rows)
                suffixes = _ids(block["key"], k + 1)[:, 1:]
                path = folder / f"count{k}.{len(paths)}"
                write_run(path, _counted(suffixes, np.ones(len(block), dtype=np.int64)))
                paths.append(path)
        levels[k] = folder / f"level{k}"
        _merge(paths, k, levels[k], rows)
    return [levels[k] for k in range(1, n + 1)]


def _estimate(sentences, order: int, discount_fallback, memory: int, folder: Path,
              progress: bool = False) -> ArpaModel:
    """The model, its arrays memory-mapped from files in ``folder``."""
    if not 1 <= order <= MAX_ORDER:
        raise PbmtError(f"the n-gram order must be 1 to {MAX_ORDER}, got {order}")
    if discount_fallback is not None:
        discount_fallback = _check_fallback(discount_fallback)
    # bytes per buffered token while counting, per record in a merge or a probability pass
    chunk_tokens = max(_MIN_ROWS, memory // (64 + 24 * order))
    rows = max(_MIN_ROWS, memory // (96 + 16 * order))
    runs = _Runs(folder, order)
    words = _read(sentences, runs, chunk_tokens, progress)
    levels = _levels(runs, folder, rows, progress)
    n_words = len(words)

    # unigrams: every word, <unk> and <s> with adjusted count 0
    unigrams = _load(levels[0], _record(1))
    adjusted = np.zeros(n_words, dtype=np.int64)
    adjusted[_ids(unigrams["key"], 1)[:, 0]] = unigrams["count"]
    adjusted[BOS] = 0
    del unigrams

    discounts = np.empty((order, 3))
    for k in range(1, order + 1):
        if k == 1:
            t = np.bincount(np.minimum(adjusted, 5), minlength=6)[1:5]
        else:
            t = np.zeros(4, dtype=np.int64)
            for block in _blocks(levels[k - 1], _record(k), rows):
                t += np.bincount(np.minimum(block["count"], 5), minlength=6)[1:5]
        discounts[k - 1] = _discounts(k, t.astype(np.float64), discount_fallback)

    # unigram probabilities: one context, interpolated with the uniform distribution over all words but <s>
    d = discounts[0]
    total = float(adjusted.sum())
    n_by_class = np.bincount(np.minimum(adjusted, 3), minlength=4)
    weight = 1.0 / total
    gamma = (n_by_class[1] * d[0] + n_by_class[2] * d[1] + n_by_class[3] * d[2]) * weight
    prob = (adjusted - np.concatenate(([0.0], d))[np.minimum(adjusted, 3)]) * weight
    prob += gamma / (n_words - 1)
    lower_prob = prob
    log10_prob = [np.log10(prob)]
    log10_prob[0][BOS] = 0.0
    log10_backoff = []
    ngrams = [np.arange(n_words, dtype=np.int32)[:, None]]
    del adjusted

    for k in tqdm(range(2, order + 1), desc="lm: probabilities", unit=" orders", disable=not progress or None,
                  leave=False):
        keys_path, prob_path, log_path = (folder / f"{name}{k}" for name in ("keys", "prob", "log10prob"))
        contexts_path = folder / f"contexts{k - 1}"
        lower_keys = None if k == 2 else _load(folder / f"keys{k - 1}", f"S{4 * (k - 1)}")
        with open(keys_path, "wb") as keys_out, open(prob_path, "wb") as prob_out, \
                open(log_path, "wb") as log_out, open(contexts_path, "wb") as contexts_out:
            for block in merge_runs([levels[k - 1]], _record(k), 4 * (k - 1), rows):
                keys, a = block["key"], block["count"]
                context_starts = group_starts(key_bytes(keys, 0, 4 * (k - 1)))
                context = np.repeat(np.arange(len(context_starts)), np.diff(np.append(context_starts, len(a))))
                weight, gamma = _interpolation_weights(context, a, discounts[k - 1])
                if k == 2:
                    lower = lower_prob[_ids(keys, 2)[:, 1]]
                else:
                    lower = lower_prob[np.searchsorted(lower_keys, key_bytes(keys, 4, 4 * k))]
                prob = (a - np.concatenate(([0.0], discounts[k - 1]))[np.minimum(a, 3)]) * weight[context]
                prob += gamma[context] * lower
                keys_out.write(np.ascontiguousarray(keys).tobytes())
                log_out.write(np.log10(prob).tobytes())
                if k < order:
                    prob_out.write(prob.tobytes())
                contexts = np.empty(len(context_starts), dtype=[("key", f"S{4 * (k - 1)}"), ("gamma", "<f8")])
                contexts["key"] = key_bytes(keys, 0, 4 * (k - 1))[context_starts]
                contexts["gamma"] = gamma
                contexts_out.write(contexts.tobytes())
        log10_backoff.append(_backoffs(folder, k - 1, n_words, rows))
        ngrams.append(_load(keys_path, _ID, (k,)))
        log10_prob.append(_load(log_path, np.float64))
        lower_prob = _load(prob_path, np.float64)
    return ArpaModel(
        words=words,
        ngrams=tuple(ngrams),
        log10_prob=tuple(log10_prob),
        log10_backoff=tuple(log10_backoff),
        discounts=discounts,
    )


def _blocks(path: Path, dtype: np.dtype, rows: int) -> Iterator[np.ndarray]:
    """The records of the file ``path``, ``rows`` at a time."""
    with open(path, "rb") as handle:
        for _ in range(0, run_length(path, dtype), rows):
            yield np.fromfile(handle, dtype=dtype, count=rows)


def _backoffs(folder: Path, k: int, n_words: int, rows: int) -> np.ndarray:
    """log10 backoff of every k-gram: log10 gamma of the contexts (``contexts{k}``,
    from the level above), 0 for the n-grams that are no context."""
    dtype = np.dtype([("key", f"S{4 * k}"), ("gamma", "<f8")])
    if k == 1:
        backoff = np.zeros(n_words)
        for block in _blocks(folder / "contexts1", dtype, rows):
            backoff[_ids(block["key"], 1)[:, 0]] = np.log10(block["gamma"])
        return backoff
    keys = _load(folder / f"keys{k}", f"S{4 * k}")
    if len(keys) == 0:
        return np.zeros(0)
    path = folder / f"log10backoff{k}"
    backoff = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(len(keys),))
    for block in _blocks(folder / f"contexts{k}", dtype, rows):
        backoff[np.searchsorted(keys, block["key"])] = np.log10(block["gamma"])
    backoff.flush()
    del backoff
    return np.load(path, mmap_mode="r")


def _discounts(
    k: int, t: np.ndarray, fallback: tuple[float, float, float] | None
) -> tuple[float, float, float]:
    """Closed-form discounts D_1, D_2, D_3+ of order ``k`` from t1..t4, the
    numbers of its n-grams with adjusted count 1, 2, 3 and 4 (float64 ``(4,)``)."""
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
    context: np.ndarray, adjusted: np.ndarray, discounts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per context of a block (float64 ``(n_contexts,)``): 1 / S(h) and gamma(h).
    ``context``: each n-gram's context, 0 .. n_contexts - 1 (every one has n-grams)."""
    n_contexts = int(context[-1]) + 1
    total = np.bincount(context, weights=adjusted, minlength=n_contexts)
    n_by_class = np.bincount(context * 4 + np.minimum(adjusted, 3), minlength=4 * n_contexts).reshape(n_contexts, 4)
    weight = 1.0 / total
    gamma = (n_by_class[:, 1] * discounts[0] + n_by_class[:, 2] * discounts[1] + n_by_class[:, 3] * discounts[2])
    return weight, gamma * weight
