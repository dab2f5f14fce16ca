"""Moses's XML input markup: translations given for spans of a line, reordering walls and zones.

A line of input may carry markup as Moses's ``-xml-input`` reads it:

- ``<TAG translation="a||b" prob="0.8||0.2">words</TAG>`` (any tag name; ``english`` is the old name of
  ``translation``) gives translations of the words it encloses, each with a probability (1 without ``prob``);
- ``<wall/>`` between two words: every word before it is translated before any word after it; a
  ``<wall>...</wall>`` puts a wall between every two of the words it encloses and at both ends;
- ``<zone>...</zone>``: once a word of the zone is translated, the zone is finished before any word outside
  it (Koehn & Haddow 2009). A wall inside a zone holds within that zone only (the innermost).

What becomes of the given translations is the markup's ``use``, the ``--xml-input`` mode:

- ``exclusive``: they are the only translations of their words: no phrase of the table that overlaps the
  span takes part;
- ``inclusive``: they compete with the table's phrases;
- ``constraint``: they compete with the table's phrases that agree with them: a phrase inside the span or
  reaching partly into it is left out, one covering all of it must contain one of its translations;
- ``ignore``: the markup is read (walls and zones hold) but its translations are not used, and a line whose
  markup is malformed is taken as text;
- ``pass-through`` (the default): the line is text; nothing is read as markup.

Tags without a translation (``<b>``) are dropped from the text, as Moses drops them. Positions count the
tokens of the text between tags (each piece is tokenised on its own, so a tag always falls between two
tokens). Paired quotes, brackets and tags left in the text make zones of their own (``quote_zones``): a
quoted span is translated as a unit, its opening mark first and its closing mark last.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from pbmt.base.protected import ProtectedPatterns, closing_tag, opening_tag
from pbmt.base.text import BUILT_IN

XML_MODES = ("exclusive", "inclusive", "constraint", "ignore", "pass-through")
#: the modes whose given translations become translation options
USES = ("exclusive", "inclusive", "constraint")
LOG_FLOOR = -100.0  # Moses floors log probabilities at -100

#: quote and bracket marks, each opening one with the mark that closes it: GNU's `%s', straight '%s' (a
#: lone apostrophe pairs with the next straight quote mark too: the zone it makes only keeps words together),
#: German „%s“ and ‚%s‘, and Markdown's emphasis marks (``**bold**``, ``*italic*``, ``~~struck~~``)
PAIRS = {'"': '"', "'": "'", "`": "'", "«": "»", "‹": "›", "“": "”", "‘": "’", "„": "“", "‚": "‘", "(": ")",
         "[": "]", "*": "*", "**": "**", "~~": "~~"}
_OPENING = frozenset(PAIRS)

_NAME = re.compile(r"[A-Za-z][\w.:-]*")
_ATTRIBUTE = re.compile(r"\s*([A-Za-z_][\w.:-]*)\s*=\s*(\"([^\"]*)\"|'([^']*)')")


class MarkupError(ValueError):
    """Malformed markup; the message says what is wrong (the caller names the file and line)."""


@dataclass(frozen=True)
class SpanTranslations:
    """The translations a tag gives for tokens ``start .. end - 1``: each a tuple of target tokens, with its
    probability (``probs``, in [0, inf); 1 when the tag gives none)."""

    start: int
    end: int
    translations: tuple[tuple[str, ...], ...]
    probs: tuple[float, ...]

    def log_probs(self) -> list[float]:
        """Natural logs of ``probs``, floored at -100 as Moses floors them."""
        return [max(LOG_FLOOR, math.log(p)) if p > 0 else LOG_FLOOR for p in self.probs]


@dataclass(frozen=True)
class Markup:
    """What the markup of one line says about its tokens.

    ``spans``: translations given for spans; ``use``: what becomes of them (one of ``USES``); ``zones``:
    (start, end) token spans, end exclusive; ``walls``: positions ``w``, a wall between tokens ``w - 1``
    and ``w``.
    """

    spans: tuple[SpanTranslations, ...] = ()
    use: str = "inclusive"
    zones: tuple[tuple[int, int], ...] = ()
    walls: tuple[int, ...] = ()

    def __post_init__(self):
        if self.use not in USES:
            raise ValueError(f"unknown use {self.use!r} of markup translations; known: {', '.join(USES)}")

    def with_quote_zones(self, tokens: list[str]) -> "Markup":
        """This markup and a zone for every pair of quote or bracket marks or tags in ``tokens``
        (``quote_zones``)."""
        zones, walls = quote_zones(tokens)
        return self._with(zones, walls)

    def with_punctuation_walls(self, tokens: list[str], protected: ProtectedPatterns = BUILT_IN) -> "Markup":
        """This markup and the walls that keep a punctuation mark between tokens ``protected`` protects in place
        (``punctuation_walls``; a model's own patterns, its text form's)."""
        return self._with((), punctuation_walls(tokens, protected))

    def _with(self, zones: tuple[tuple[int, int], ...], walls: tuple[int, ...]) -> "Markup":
        if not zones and not walls:
            return self
        return replace(self, zones=tuple(dict.fromkeys(self.zones + zones)),
                       walls=tuple(sorted(set(self.walls + walls))))

    def constraints(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The reordering constraints on a sentence of ``n`` tokens as the searches read them:
        (zones ``int32[z, 2]``: start, end exclusive; walls ``int32[w, 3]``: position ``w`` and the span
        ``[lo, hi)`` it divides, the innermost zone around it or the whole sentence). Walls at either end of
        the sentence or of their zone divide nothing and are left out."""
        zones = sorted({(s, e) for s, e in self.zones if 0 <= s < e <= n})
        walls = []
        for w in sorted(set(self.walls)):
            around = [(s, e) for s, e in zones if s < w < e]
            lo, hi = min(around, key=lambda z: z[1] - z[0]) if around else (0, n)
            if lo < w < hi:
                walls.append((w, lo, hi))
        return (np.array(zones, np.int32).reshape(-1, 2), np.array(walls, np.int32).reshape(-1, 3))


#: The punctuation marks Moses's ``-monotone-at-punctuation`` keeps in place (but the straight double quote, a
#: quote mark here), and the closing marks after which one is kept in place.
_PUNCTUATION = frozenset({",", ".", "!", "?", ":", ";"})
_CLOSING_MARKS = frozenset(PAIRS.values()) | {"”", "’"}


def punctuation_walls(tokens: list[str], protected: ProtectedPatterns = BUILT_IN) -> tuple[int, ...]:
    """Walls around each punctuation mark (``_PUNCTUATION``) that has a token ``protected`` protects (a
    placeholder, tag, URL, ...) after it and a protected token or a closing mark before it,
    as Moses's ``-monotone-at-punctuation`` sets them for the mark: the mark and the token before it are translated
    in their order, after everything before them and before everything after them.

    A placeholder a model never saw is an unknown word with no place of its own: with nothing to hold it, the
    Bible model's language model moved ``%s`` across the colon of `` `%s': %s `` (``error the learned `%s' %s:``).
    Walls at every punctuation mark, Moses's option, cost a model trained on software messages 0.38 BLEU (its
    untuned test split; the Bible's test set 0.00); these, around marks between protected tokens only, change one
    message of that split untuned and one tuned, both for the better, and no verse (docs/real-text.md)."""
    protects = protected.protects
    walls: list[int] = []
    for i in range(1, len(tokens) - 1):
        if tokens[i] in _PUNCTUATION and protects(tokens[i + 1]) and (
                tokens[i - 1] in _CLOSING_MARKS or protects(tokens[i - 1])):
            walls += [i - 1, i, i + 1]
    return tuple(walls)


def quote_zones(tokens: list[str]) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """Zones and walls of the paired quote and bracket marks (``PAIRS``) and of the paired tags (``<b>``
    and ``</b>``, ``<a href="x">`` and ``</a>``: protected tokens) among ``tokens``: the zone runs from the
    opening mark to the closing one, with a wall after the opening mark and one before the closing mark
    (both inside the zone), so the enclosed words are translated together, between their marks. A mark
    without its partner makes nothing."""
    joined = "\n".join(tokens)
    if _OPENING.isdisjoint(tokens) and "<" not in joined and "&lt;" not in joined:
        return (), ()
    zones, walls = [], []
    open_marks: list[tuple[object, int]] = []  # what closes each mark still open, and its position
    for i, token in enumerate(tokens):
        name = closing_tag(token) if token[:1] in "<&" else None
        closer = ("tag", name) if name is not None else token
        k = next((k for k in range(len(open_marks) - 1, -1, -1) if open_marks[k][0] == closer), None)
        if k is not None:
            start = open_marks[k][1]
            del open_marks[k:]
            zones.append((start, i + 1))
            walls += [start + 1, i]
        elif token in PAIRS:
            open_marks.append((PAIRS[token], i))
        elif token[:1] in "<&" and (name := opening_tag(token)) is not None:
            open_marks.append((("tag", name), i))
    return tuple(zones), tuple(walls)


#: The closing marks that end a quote opened by each mark: its partner in ``PAIRS``, and German's „…” and ‚…’ too.
_CLOSERS = {mark: frozenset({closer, {"„": "”", "‚": "’"}.get(mark, closer)}) for mark, closer in PAIRS.items()}
_ANY_CLOSER = frozenset().union(*_CLOSERS.values())


def matched_quotes(target: list[str], links, source: list[str], zones) -> list[str]:
    """``target`` with the closing mark of each quoted zone of ``source`` made its opening mark's partner.

    ``links`` are the word alignment's (source position, target position) pairs; ``zones`` the sentence's
    (start, end) zones, end exclusive. A zone whose first and last source tokens are a pair of marks
    (``PAIRS``), each aligned to one target token, the opening one before the closing one, both marks, but of
    different pairs (``'%4 ”``), gets the partner of its opening mark at its end (``'%4'``). A zone does not stop a
    phrase that ends one quote and starts the next: a model that learnt ``» y «`` -> ``” and “`` closes a quote
    it opened with ``'`` by ``”``. What the marks enclose, and every other token, is left as it is."""
    aligned: dict[int, list[int]] = {}
    for s, t in links:
        aligned.setdefault(int(s), []).append(int(t))
    out = list(target)
    for start, end in zones:
        start, end = int(start), int(end)
        if source[start] not in PAIRS or source[end - 1] not in _CLOSERS[source[start]]:
            continue
        opened, closed = aligned.get(start, []), aligned.get(end - 1, [])
        if len(opened) == 1 and len(closed) == 1 and opened[0] < closed[0]:
            mark, closer = out[opened[0]], out[closed[0]]
            if mark in PAIRS and closer in _ANY_CLOSER and closer not in _CLOSERS[mark]:
                out[closed[0]] = PAIRS[mark]
    return out


def parse(line: str, split: Callable[[str], list[str]], split_target: Callable[[str], list[str]],
          use: str) -> tuple[list[str], Markup]:
    """The tokens of ``line`` without its markup and what the markup says.

    ``split`` turns a piece of text between tags into tokens, ``split_target`` a given translation into
    target tokens; ``use`` is the ``--xml-input`` mode: with ``ignore`` the given translations are dropped.
    Raises MarkupError, saying what is wrong, for an unclosed or unmatched tag, an attribute whose value
    has no quotes, a ``prob`` that is not a non-negative number, as many probabilities as translations
    not given, an empty translation, or a translation or zone enclosing no word.
    """
    tokens: list[str] = []
    open_tags: list[tuple[str, int, dict[str, str]]] = []
    spans: list[SpanTranslations] = []
    zones: list[tuple[int, int]] = []
    walls: list[int] = []
    text_from = 0
    at = line.find("<")
    while at >= 0:
        if not _starts_tag(line, at):
            at = line.find("<", at + 1)
            continue
        tokens += split(line[text_from:at])
        end = line.find(">", at)
        if end < 0:
            raise MarkupError(f"the tag {_shown(line[at:])} is not closed with '>'")
        closing, name, attributes, unary = _tag(line[at:end + 1])
        position = len(tokens)
        if closing:
            if not open_tags:
                raise MarkupError(f"</{name}> closes a tag that was never opened")
            opened, start, attributes = open_tags.pop()
            if opened != name:
                raise MarkupError(f"<{opened}> is closed by </{name}>")
            _finish(name, attributes, start, position, split_target, use, spans, zones, walls)
        elif unary:
            _finish(name, attributes, position, position, split_target, use, spans, zones, walls)
        else:
            open_tags.append((name, position, attributes))
        text_from = end + 1
        at = line.find("<", text_from)
    tokens += split(line[text_from:])
    if open_tags:
        raise MarkupError(f"<{open_tags[-1][0]}> is never closed")
    return tokens, Markup(tuple(spans), use if use in USES else "inclusive", tuple(zones), tuple(walls))


def check(line: str, use: str) -> None:
    """Raise MarkupError if the markup of ``line`` is malformed and the ``--xml-input`` mode ``use`` reads it
    (``exclusive``, ``inclusive``, ``constraint``; the others take such a line as text), before any tokenising."""
    if use in USES:
        parse(line, str.split, str.split, use)


def _starts_tag(line: str, at: int) -> bool:
    """Whether the '<' at ``at`` opens a tag, as Moses tells: a letter or '/' follows it."""
    following = line[at + 1:at + 2]
    return following.isascii() and (following.isalpha() or following == "/")


def _shown(text: str, most: int = 40) -> str:
    return repr(text if len(text) <= most else text[:most - 3] + "...")


def _tag(tag: str) -> tuple[bool, str, dict[str, str], bool]:
    """(closing, name, attributes, unary) of a tag's text ``<...>``."""
    inner = tag[1:-1].strip()
    closing = inner.startswith("/")
    unary = inner.endswith("/")
    if closing and unary:
        raise MarkupError(f"the tag {_shown(tag)} is both closing and unary")
    inner = inner[1 if closing else 0:len(inner) - (1 if unary else 0)].strip()
    name = _NAME.match(inner)
    if name is None:
        raise MarkupError(f"the tag {_shown(tag)} has no name")
    rest = inner[name.end():]
    if closing and rest.strip():
        raise MarkupError(f"the closing tag {_shown(tag)} has attributes")
    attributes: dict[str, str] = {}
    while rest.strip():
        found = _ATTRIBUTE.match(rest)
        if found is None:
            bare = re.match(r"\s*([A-Za-z_][\w.:-]*)\s*=\s*(\S*)", rest)
            if bare:
                raise MarkupError(f"attribute {bare.group(1)} of <{name.group()}> has no quotes around its value "
                                  f"({bare.group(1)}={bare.group(2)})")
            raise MarkupError(f"unexpected {_shown(rest.strip(), 20)} in the tag <{name.group()}>")
        value = found.group(3) if found.group(3) is not None else found.group(4)
        attributes[found.group(1)] = html.unescape(value)
        rest = rest[found.end():]
    return closing, name.group(), attributes, unary


def _finish(name: str, attributes: dict[str, str], start: int, end: int, split_target, use: str,
            spans: list, zones: list, walls: list) -> None:
    """What a complete tag over tokens ``start .. end - 1`` adds."""
    if name == "wall":
        walls.extend([start] if start == end else range(start, end + 1))
        return
    if name == "zone":
        if start == end:
            raise MarkupError("a <zone> encloses no word")
        zones.append((start, end))
        return
    given = [attributes[key] for key in ("translation", "english") if attributes.get(key, "") != ""]
    if not given:
        return  # a tag without translations (<b>) says nothing
    alternatives = [text for value in given for text in value.split("||")]
    probs = [1.0] * len(alternatives)
    if attributes.get("prob", "") != "":
        values = attributes["prob"].split("||")
        if len(values) != len(alternatives):
            raise MarkupError(f"<{name}> gives {len(alternatives)} translations but {len(values)} probabilities")
        probs = []
        for value in values:
            try:
                prob = float(value)
            except ValueError:
                prob = math.nan
            if not (math.isfinite(prob) and prob >= 0):
                raise MarkupError(f"prob {value!r} of <{name}> is not a number >= 0")
            probs.append(prob)
    if start == end:
        raise MarkupError(f"<{name} translation=...> encloses no word")
    translations = []
    for k, text in enumerate(alternatives, 1):
        words = tuple(split_target(text))
        if not words:
            raise MarkupError(f"translation {k} of <{name}> is empty")
        translations.append(words)
    if use in USES:
        spans.append(SpanTranslations(start, end, tuple(translations), tuple(probs)))
