"""Placeholder classes: numbers and protected tokens stand in the model as class tokens, and come back
through the word alignment.

A model trained with placeholders (``pbmt train --placeholders``; ``placeholders = true`` under
``[preprocess]`` of its ``pbmt.toml``) never sees a number, a printf directive or a URL itself, only its class
(``@num@``, ``@ph@``, ``@url@``, ``@tag@``), in training and decoding alike: the phrase table and the
language model learn where such a token goes, and one the training text never held costs nothing and cannot
be mistranslated. This is Moses's ``-placeholder-factor`` with Koehn's ``ph_numbers.perl``.

``restore`` puts the originals back: each class token of the output takes the original of the source class
token of its class it is aligned to; the class tokens left over take the source's unused originals of their
class in source order. An accelerator mark (``_Archivo``) comes off its word so that the word is translated,
and goes back on the first letter of the target word aligned to it (of the first unmarked word, when no
target word is aligned to it), so the output has as many marks as the source.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from pbmt.base.protected import ProtectedPatterns

#: The class token of a number and of each class of protected token (``pbmt.base.protected.BUILT_IN``).
CLASS_TOKENS = {"num": "@num@", "url": "@url@", "tag": "@tag@", "ph": "@ph@"}
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_MARKS = "_&"


def _class(word: str, protected: ProtectedPatterns) -> str | None:
    """The class token that stands for ``word`` in a model with placeholders, or None."""
    if _NUMBER.fullmatch(word):
        return CLASS_TOKENS["num"]
    kind = protected.kind(word) if protected.protects(word) else None
    return CLASS_TOKENS.get(kind) if kind != "acc" else None


def _mark(word: str, protected: ProtectedPatterns) -> tuple[str, str]:
    """An accelerator-marked word without its mark, and the mark (``""`` for any other token)."""
    if protected.protects(word) and protected.kind(word) == "acc":
        for i, c in enumerate(word):
            if c in _MARKS and i + 1 < len(word) and word[i + 1].isalpha():
                return word[:i] + word[i + 1:], c
    return word, ""


def unmarked(words: Sequence[str], protected: ProtectedPatterns) -> list[str]:
    """``words`` with the accelerator marks taken off (before casing: ``_Abrir`` is cased as ``Abrir``)."""
    return [_mark(w, protected)[0] for w in words]


def classes(words: Sequence[str], protected: ProtectedPatterns) -> list[str]:
    """``words`` with each number and protected token replaced by its class token."""
    return [_class(w, protected) or w for w in words]


def restore(target: Sequence[str], alignment: Iterable[tuple[int, int]], source: Sequence[str],
            protected: ProtectedPatterns) -> list[str]:
    """The output tokens ``target`` with their class tokens replaced by the originals in ``source`` (the input's
    tokens before casing, as split) and the accelerator marks put back, through ``alignment`` ((source
    position, target position) pairs). A class token with no original left in the source is dropped."""
    source_class = [_class(w, protected) for w in source]
    links: dict[int, list[int]] = {}
    back: dict[int, list[int]] = {}
    for s, t in alignment:
        links.setdefault(t, []).append(s)
        back.setdefault(s, []).append(t)
    used: set[int] = set()
    out: list[str | None] = list(target)
    pending = []
    for t, word in enumerate(target):
        if word not in CLASS_TOKENS.values():
            continue
        aligned = [s for s in sorted(links.get(t, ())) if source_class[s] == word and s not in used]
        if aligned:
            used.add(aligned[0])
            out[t] = source[aligned[0]]
        else:
            pending.append(t)
    for t in pending:
        left = [s for s, c in enumerate(source_class) if c == target[t] and s not in used]
        if left:
            used.add(left[0])
        out[t] = source[left[0]] if left else None
    marked: set[int] = set()

    def markable(t: int) -> bool:
        word = out[t]
        return (t not in marked and word is not None and any(c.isalpha() for c in word)
                and not protected.protects(word))

    unplaced = []
    for s, word in enumerate(source):
        mark = _mark(word, protected)[1]
        if not mark or any(out[t] == word for t in back.get(s, ())):  # none, or it passed through as written
            continue
        aligned = [t for t in sorted(back.get(s, ())) if markable(t)]
        if aligned:
            marked.add(aligned[0])
        else:
            unplaced.append(mark)
            continue
        out[aligned[0]] = _marked(out[aligned[0]], mark)
    for mark in unplaced:  # a mark whose word has no aligned target word goes on the first free word
        free = [t for t in range(len(out)) if markable(t)]
        if free:
            marked.add(free[0])
            out[free[0]] = _marked(out[free[0]], mark)
    return [w for w in out if w is not None]


def _marked(word: str, mark: str) -> str:
    """``word`` with an accelerator ``mark`` before its first letter."""
    first = next(i for i, c in enumerate(word) if c.isalpha())
    return word[:first] + mark + word[first:]
