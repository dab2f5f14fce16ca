"""Operation sequences of a word-aligned corpus, the training text of the operation sequence model.

``operation_sequence`` converts one aligned sentence pair into the operations
that generate it in target order (``pbmt.model.osm``: Durrani et al.'s
generative story, spelt as Moses's operation corpora): the cepts in the order
of their first target word, each source word linked to nothing right after
the word before it (at the sentence start if first), each target word linked
to nothing in its place. ``write_operation_corpus`` converts a whole corpus,
one sentence's operations a line: the text ``pbmt train --osm ORDER``
estimates its n-gram model from.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from pbmt.base.files import Outputs, read_lines
from pbmt.base.text import tokens
from pbmt.model.osm import CONTINUE_CEPT, IDENTICAL, Generator, cepts, generate, source_only, target_only
from pbmt.train.corpus import alignment_points


def operation_sequence(src: Sequence[str], tgt: Sequence[str], links: Iterable[tuple[int, int]],
                       identical: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The operations that generate the aligned pair ``src``/``tgt`` (words; ``links``: (source, target)
    positions, 0-based) in target order, as Moses's ``generateSequences`` writes them.
    ``identical``: the source words whose one-to-one identical cept is Generate Identical
    (``identical_singletons``)."""
    links = list(links)
    units = cepts(len(src), len(tgt), links)
    unlinked_src = set(range(len(src))) - {i for i, _ in links}
    unlinked_tgt = set(range(len(tgt))) - {j for _, j in links}
    by_first = {t[0]: (s, t) for s, t in units}
    run = Generator()

    def source_only_run() -> None:
        while run.j in unlinked_src:
            run.emit(source_only(src[run.j]))

    source_only_run()
    for position in range(len(tgt)):
        if position in unlinked_tgt:
            run.operations.append(target_only(tgt[position]))
        elif position in by_first:
            source, target = by_first[position]
            words = [src[i] for i in source]
            first = (IDENTICAL if len(words) == 1 and words[0] in identical
                     else generate([tgt[k] for k in target], words))
            for k, i in enumerate(source):
                run.move(i)
                run.emit(first if k == 0 else CONTINUE_CEPT)
                source_only_run()
    return run.operations


def identical_singletons(pairs: Iterable[tuple[Sequence[str], Sequence[str], Iterable[tuple[int, int]]]]
                         ) -> frozenset[str]:
    """The source words linked exactly once in the whole corpus, and then one-to-one to an identical target
    word (Moses's ``extract-singletons.perl``): such a cept is Generate Identical, the operation the decoder
    gives a word it copies because it does not know it. ``pairs``: (source words, target words, links)."""
    once: Counter[str] = Counter()
    for src, tgt, links in pairs:
        links = list(links)
        per_src = Counter(i for i, _ in links)
        per_tgt = Counter(j for _, j in links)
        for i, j in links:
            one_to_one = per_src[i] == 1 and per_tgt[j] == 1 and src[i] == tgt[j]
            once[src[i]] += 1 if one_to_one else 2
    return frozenset(w for w, count in once.items() if count == 1)


def _aligned_pairs(src: os.PathLike, tgt: os.PathLike, alignment: os.PathLike):
    """(source words, target words, links) of each line of line-parallel tokenised texts and their
    alignment; FormatError for a bad alignment line (naming it)."""
    for (_, f), (_, e), (number, a) in zip(read_lines(src), read_lines(tgt), read_lines(alignment)):
        f, e = tokens(f), tokens(e)
        yield f, e, alignment_points(alignment, number, a, len(f), len(e))


@dataclass(frozen=True)
class OperationCorpus:
    """What ``write_operation_corpus`` wrote: ``sentences`` lines, ``operations`` in all, ``identical`` the
    number of Generate Identical words (``identical_singletons``)."""

    sentences: int
    operations: int
    identical: int


def write_operation_corpus(src: os.PathLike, tgt: os.PathLike, alignment: os.PathLike, out: os.PathLike
                           ) -> OperationCorpus:
    """Write the operation sequence of every pair of the tokenised texts ``src`` and ``tgt`` with their word
    ``alignment`` (``i-j`` per line) to ``out``, one sentence a line (written whole or not at all)."""
    identical = identical_singletons(_aligned_pairs(src, tgt, alignment))
    sentences = operations = 0
    with Outputs() as outputs:
        handle = outputs.open(out)
        for f, e, links in _aligned_pairs(src, tgt, alignment):
            sequence = operation_sequence(f, e, links, identical)
            handle.write(" ".join(sequence) + "\n")
            sentences += 1
            operations += len(sequence)
    return OperationCorpus(sentences, operations, len(identical))
