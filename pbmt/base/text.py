"""Plain text to a model's tokens and back: Moses's tokeniser, truecaser and detokeniser (sacremoses).

A ``TextForm`` says how a line of plain text in one language becomes the
tokens a model was trained on, and how the model's output tokens become plain
text again:

- NFC-normalise (a letter with a combining accent and the same letter
  precomposed are one word to the model);
- tokenise with sacremoses's Moses tokeniser (``escape=False``: quotes and
  ampersands stay as they are, as the shared ``*.tok.*`` files were made),
  each protected span (``pbmt.base.protected``: placeholders, tags, URLs, ...) one
  token, or split at spaces and tabs for text that is already tokenised;
- case: ``truecase`` (Moses's truecaser, ``train-truecaser.perl`` and
  ``truecase.perl``: every word takes its most frequent casing in the training
  text, except that a word seen in another casing inside a sentence keeps
  it, and a lowercase word stays lowercase), ``lowercase``,
  or ``none``; with placeholders, numbers and protected tokens then become
  class tokens (``pbmt.base.placeholders``);
- back: ``detruecase`` (a capital at the start of the line, unless the
  source line starts lowercase, and after a full stop), then the Moses
  detokeniser, which leaves protected tokens byte for byte as they are,
  glues a paired tag to the text it encloses, an ellipsis to its word,
  but in French, guillemets to their quote (``«%s»``), paired quotes to what
  they enclose (`` `%s' ``, ``“%s”``) and a typographic apostrophe to its word.

Protected tokens keep their casing: ``%S`` is not ``%s``.

Why only after a full stop: Moses's ``detruecase.perl`` also capitalises after
``?``, ``!`` and ``:``, but in the English of the shared Bible training text
the word after ``?`` is lowercase 71% of the time, after ``!`` 91% and after
``:`` 95% (after ``.``: 0.3%), so that rule would miscase most of them.

The truecaser's model file is Moses's format (one line per lowercased word:
``Word (count/total) word (count) ...``), so ``truecase.perl -model`` reads it.
"""

from __future__ import annotations

import os
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable, Sequence

import regex

from pbmt.base.errors import FormatError
from pbmt.base.files import atomic_write, read_lines
from pbmt.base.placeholders import classes, unmarked
from pbmt.base.protected import ProtectedPatterns, closing_tag, decode, empty_tag, encode, opening_tag

CASINGS = ("truecase", "lowercase", "none")

#: Tokens after which the truecaser starts a sentence, and those after which it still takes the next word as a
#: sentence's first (``truecase.perl``'s).
_SENTENCE_END = frozenset({".", ":", "?", "!"})
_DELAYED_START = frozenset({"(", "[", '"', "'", "&apos;", "&quot;", "&#91;", "&#93;"})
#: The built-in protected patterns, which every text form uses unless given its own.
BUILT_IN = ProtectedPatterns()
#: Guillemets written against their quote (but in French, which spaces them).
_OPENING_QUOTES, _CLOSING_QUOTES = frozenset("«‹"), frozenset("»›")
_ELLIPSIS = "…"
#: Quotes written against what they enclose when the line closes them, by opening quote: its closing quotes
#: (GNU's `%s', '%s', “%s”, ‘%s’, German „%s“). Moses's detokeniser spaces them as words (`%s 'is, “%s ”) and
#: takes a straight quote after an s for a plural's possessive (status' %s ').
_PAIRED_QUOTES = {"`": frozenset("'"), "'": frozenset("'"), "“": frozenset("”"), "‘": frozenset("’"),
                  "„": frozenset("“”")}
#: The typographic apostrophe, which the tokeniser splits from its word (I’m -> I ’ m), and the English endings
#: after which it is an apostrophe even inside ‘…’ (I’m, can’t, it’s, we’re, they’ve, you’ll, he’d).
_APOSTROPHE = "’"
_AFTER_APOSTROPHE = frozenset({"s", "t", "m", "re", "ve", "ll", "d"})
#: Modifier keys, after which ``+`` joins a key combination (``Ctrl+S``, ``Ctrl+Alt+Supr``, as KDE's and GNOME's
#: messages write them; Moses's detokeniser spaces the ``+`` as a word: ``Ctrl + S``).
_MODIFIER_KEYS = frozenset({"Ctrl", "Control", "Alt", "AltGr", "Shift", "Super", "Meta", "Cmd", "Fn", "Mayús",
                            "Mayúsculas", "Strg", "Umschalt", "Maj", "⌘", "⌥", "⇧"})
#: A character as a reader sees it (an extended grapheme cluster); a code point that can make one of several code
#: points (a combining mark, a joiner, a modifier, a regional indicator, a Hangul jamo); a Hangul syllable or jamo.
_CHARACTER = regex.compile(r"\X")
_JOINING = regex.compile(r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}"
                         r"\p{Grapheme_Cluster_Break=SpacingMark}\p{Grapheme_Cluster_Break=Prepend}"
                         r"\p{Grapheme_Cluster_Break=Regional_Indicator}\p{Grapheme_Cluster_Break=L}"
                         r"\p{Grapheme_Cluster_Break=V}\p{Grapheme_Cluster_Break=T}\p{Script=Hangul}"
                         r"\u00ad\u2060]")
_HANGUL = regex.compile(r"\p{Script=Hangul}")
#: A currency sign, which Moses's detokeniser writes against the next token (``$5``) even after an amount, where it
#: ends the amount (``12 € al mes`` came out ``12 €al mes``); and a digit.
_CURRENCY = regex.compile(r"\p{Sc}+")
_DIGIT = regex.compile(r"\d")
#: A token ending in a letter or digit with combining marks or invisible joiners (Moses split the word after them:
#: ẹ̀ | ran, Persian's می‌ | خواهم after a zero-width non-joiner), the joiners that stay inside a word (a soft hyphen,
#: the zero-width non-joiner and joiner, the word joiner), and a token starting with a letter or digit.
_MARKED_END = regex.compile(r"[\p{L}\p{N}][\p{M}\u00ad\u200c\u200d\u2060]+$")
_JOINERS = regex.compile(r"[\u00ad\u200c\u200d\u2060]+")
#: Markdown's marks that Moses's tokeniser cuts into one token a character (``**`` → ``* *``, ``## Title`` → ``# #
#: Title``, ``~~struck~~``), each of whose runs is one token (``_runs``); and the emphasis marks of them that
#: enclose words, written against what they enclose when the line closes them (``**Save**``, ``*italic*``).
_RUNS = frozenset("*_~#")
_EMPHASIS = frozenset({"*", "**", "***", "~~"})
_NUMERIC = regex.compile(r"[\d.,]+")
#: Full-width punctuation (Chinese and Japanese text's, which Moses's detokeniser spaces as words in any other
#: language: ``ｈｏｌａ！`` came back ``ｈｏｌａ ！``): closing marks written against the token before them, opening
#: ones against both their neighbours (a full-width mark's glyph holds its own space).
_WIDE_CLOSING = frozenset("！？），、。：；」』】〕〉》｝］．，")
_WIDE_OPENING = frozenset("（「『【〔〈《｛［")
#: Invisible marks of bidirectional text: those that open an embedding or isolate (written against what follows),
#: those that close one (against what precedes), and the right-to-left, left-to-right and Arabic letter marks,
#: written against the word before them, or the word after them at the line's start (Moses spaced them as words).
_BIDI_OPENING = frozenset("\u202a\u202b\u202d\u202e\u2066\u2067\u2068")
_BIDI_CLOSING = frozenset("\u202c\u2069")
_BIDI_MARKS = frozenset("\u200e\u200f\u061c")
_LETTER = regex.compile(r"[\p{L}\p{N}]")
#: A command-line option (``--color``, ``-H``), whose optional value is written against it (``--color[=WHEN]``).
_OPTION = regex.compile(r"--?[^\W\d_]")


def nfc(line: str) -> str:
    """``line`` in Unicode normal form C (precomposed letters)."""
    return line if line.isascii() else unicodedata.normalize("NFC", line)


def tokens(line: str) -> list[str]:
    """The tokens of a line: NFC-normalised, split at spaces and tabs, empty tokens dropped."""
    return [t for t in nfc(line).replace("\t", " ").split(" ") if t]


def moses_knows(language: str) -> bool:
    """Whether Moses's tokeniser has rules of its own for ``language``: its non-breaking prefixes (``Sr.``,
    ``etc.``), or its Chinese, Japanese and Korean characters; for any other code it quietly uses English's."""
    from sacremoses.corpus import NonbreakingPrefixes

    return language in NonbreakingPrefixes().available_langs or language in ("ja", "ko", "zh")


def unknown_language(language: str) -> str:
    """What a user is told of a ``language`` Moses's scripts have no rules for (``moses_knows``)."""
    return (f"Moses's scripts have no rules for language {language!r}: English's are used (the tokeniser's "
            "non-breaking prefixes, such as Mr.)")


def tokenizer(language: str, protected: ProtectedPatterns = BUILT_IN) -> Callable[[str], list[str]]:
    """Moses's tokeniser for ``language`` (sacremoses, ``escape=False``) with each ``protected`` span one token
    (``pbmt.base.protected.encode``) and no character split (``_whole_characters``): an NFC-normalised line to
    its tokens."""
    from sacremoses import MosesTokenizer

    moses = MosesTokenizer(language).tokenize

    def words(line: str, start: int, end: int) -> list[str]:
        text = line[start:end]
        return _runs(line, start, end, _whole_characters(text, moses(text, escape=False)))

    def tokenize(line: str) -> list[str]:
        line = nfc(line)
        found, position = [], 0
        for span in protected.spans(line):
            found += words(line, position, span.start)
            position = _character_end(line, span.end)
            found.append(encode(line[span.start:position]))
        return found + words(line, position, len(line))

    return tokenize


def _character_end(line: str, position: int) -> int:
    """The end of the character (extended grapheme cluster) of ``line`` that ``position`` is inside, or
    ``position`` at a character's start (a protected span ``%1`` before the keycap's marks of ``%1️⃣``)."""
    if position == len(line) or line.isascii() or not _JOINING.match(line, position):
        return position
    for m in _CHARACTER.finditer(line, max(0, position - 40)):
        if m.end() >= position:
            return m.end() if m.start() < position else position
    return position


def _whole_characters(text: str, pieces: list[str]) -> list[str]:
    """``pieces``, Moses's tokens of ``text``, with each piece Moses cut from the one before it inside a character
    as a reader sees it (Unicode's extended grapheme cluster), inside a Korean word, or just after a letter's
    combining marks, joined back to it.

    Moses's tokeniser makes a token of each code point that is not a letter or digit, so an emoji with a skin
    tone (👍🏽), a flag (🇪🇸: two regional indicators), a family joined by zero-width joiners, a keycap (1️⃣) or a
    letter with a combining mark that has no precomposed form (x̅, Yoruba's ẹ̀ran) came out in pieces (``👍 🏽``,
    ``ẹ ̀ ran``) that the detokeniser spaces apart, as it did a word with a soft hyphen (``compu­tadora``) or
    Persian's zero-width non-joiner (``می‌خواهم``); and sacremoses, unlike Moses, counts Hangul as letters only in
    Korean, so a Korean word in a Spanish line came out one token a syllable. Where a piece is not in ``text`` as
    it is (Moses drops control characters), the pieces stay as Moses made them."""
    if text.isascii() or not _JOINING.search(text):
        return pieces
    inside = {i for m in _CHARACTER.finditer(text) for i in range(m.start() + 1, m.end())}
    out: list[str] = []
    position = end = 0
    for piece in pieces:
        at = text.find(piece, position)
        if at < 0:
            return pieces
        if out and at == end and (at in inside or _MARKED_END.search(out[-1]) and _LETTER.match(piece)
                                  or _JOINERS.fullmatch(piece) and _MARKED_END.search(out[-1] + piece)
                                  or _HANGUL.match(out[-1][-1]) and _HANGUL.match(piece)):
            out[-1] += piece
        else:
            out.append(piece)
        position = end = at + len(piece)
    return out


def _runs(line: str, start: int, stop: int, pieces: list[str]) -> list[str]:
    """``pieces``, Moses's tokens of ``line[start:stop]`` (the text between two protected tokens), with each run of
    one of Markdown's marks (``_RUNS``) that Moses cut into one token a character one token again, as the text has it
    (``##``, ``____``), but a run of emphasis marks (``**``, ``~~``) only where it touches a word or a protected
    token, as Markdown's emphasis does (``**bold**``, ``**%1**``): spaced both sides (GNU tar's ``** Block of NULs
    **``, ``x ** 2``) it stays Moses's tokens, which the detokeniser writes spaced."""
    if not any(p in _RUNS for p in pieces):
        return pieces
    located: list[tuple[str, int]] = []  # each piece or run, and where it starts in the line
    position = end = start
    for piece in pieces:
        at = line.find(piece, position, stop)
        if at < 0:
            return pieces
        last = located[-1][0] if located else ""
        if last and at == end and piece in _RUNS and last == piece * len(last):
            located[-1] = (last + piece, located[-1][1])
        else:
            located.append((piece, at))
        position = end = at + len(piece)
    out: list[str] = []
    for piece, at in located:
        after = at + len(piece)
        if len(piece) > 1 and piece[0] in "*~" and (at == 0 or line[at - 1].isspace()) and (
                after == len(line) or line[after].isspace()):
            out += list(piece)
        else:
            out.append(piece)
    return out


def detokenizer(language: str, protected: ProtectedPatterns = BUILT_IN) -> Callable[[Sequence[str]], str]:
    """Moses's detokeniser for ``language`` (sacremoses, no unescaping, as the tokeniser escapes nothing):
    tokens to a line of plain text. Protected tokens come back as they were, spaced as words, except that a
    tag with its partner in the line is written against the text it encloses, as are guillemets (but in
    French), paired quotes (`` `%s' ``, ``“%s”``, ``‘%s’``, ``„%s“``) and a typographic apostrophe inside a word
    (``I’m``); an ellipsis character is written against the word before it (``Guardar como…``). Korean words
    are spaced as words: Moses's detokeniser writes Chinese and Japanese characters against each other, and
    Hangul too but in Korean, so ``한국어 텍스트`` in an English line came out ``한국어텍스트``; so is a currency
    sign after an amount (``12 € al mes``), which Moses writes against the next word as it does before one
    (``$5``)."""
    from sacremoses import MosesDetokenizer

    moses = MosesDetokenizer(language).detokenize
    quotes = language != "fr"

    def detokenize(words: Sequence[str]) -> str:
        glue_right, glue_left = _glued(words, quotes)
        hidden = sorted({i for i, w in enumerate(words) if protected.protects(w) or not w.isascii() and (
                         _HANGUL.search(w) or i and _CURRENCY.fullmatch(w) and _DIGIT.search(words[i - 1]))}
                        | glue_right | glue_left)
        if not hidden:
            return moses(list(words), unescape=False)
        stand_in = "Pbmtprotected"
        while any(stand_in in w for w in words):
            stand_in += "x"
        shown = list(words)
        for i in hidden:
            shown[i] = stand_in
        parts = moses(shown, unescape=False).split(stand_in)
        out = parts[0]
        for i, after in zip(hidden, parts[1:]):
            if i in glue_left and out.endswith(" "):
                out = out[:-1]
            out += decode(words[i])
            if i in glue_right and after.startswith(" "):
                after = after[1:]
            out += after
        return out

    return detokenize


def _glued(words: Sequence[str], quotes: bool) -> tuple[set[int], set[int]]:
    """The positions of the tokens written against the next token (an opening tag with its closing tag later
    in the line, an opening guillemet, an opening quote the line closes) and against the previous one (the
    closing tag, a closing guillemet, a closing quote, an ellipsis); a typographic apostrophe between two words
    is in both, but after an s before another word (a plural's possessive: ``users’ files``), and a straight
    one after an s before a lowercase word is that possessive, never an opening quote (``users' files``), unless a
    quote closes that word (``is 'default'``);
    angle brackets around one token are written against it (``<%s>``), a ``+`` after a modifier key against both
    its neighbours (``Ctrl+S``), the target of a Markdown link against its text (``[text](URL)``) and Markdown's
    emphasis marks against what they enclose (``**bold**``); full-width punctuation and bidirectional text's
    invisible marks as ``_WIDE_CLOSING`` and ``_BIDI_OPENING`` say; a slash between words and an en dash between
    numbers against both their neighbours (``and/or``, ``2012–2021``, where Moses writes ``and / or``), as is a slash
    between two options (``--title/-T``); an option's
    optional value against the option (``--color[=WHEN]``, where Moses writes ``--color [= WHEN]``), as is the value
    to fill in after its equals sign (``--suffix=SUFFIX``); an empty
    element (``<nl/>``, ``<br>``: a line break) against both its neighbours and a closing tag against a tag after it
    (``</para><para>``), as the gettext training messages write them all but 5 times in 180."""
    right, left = set(), set()
    open_tags: list[tuple[str, int]] = []
    open_quotes: list[tuple[frozenset[str], int | None]] = []
    for i, word in enumerate(words):
        if quotes and word in _OPENING_QUOTES:
            right.add(i)
        elif quotes and word in _CLOSING_QUOTES or word == _ELLIPSIS:
            left.add(i)
        elif word == _APOSTROPHE and _between_words(words, i) and (
                words[i + 1].lower() in _AFTER_APOSTROPHE or not any(word in c for c, _ in open_quotes)):
            left.add(i)
            if words[i + 1].lower() in _AFTER_APOSTROPHE or words[i - 1][-1] not in "sS":
                right.add(i)
        elif (k := next((k for k in range(len(open_quotes) - 1, -1, -1) if word in open_quotes[k][0]),
                        None)) is not None:
            if open_quotes[k][1] is not None:
                right.add(open_quotes[k][1])
            left.add(i)
            del open_quotes[k:]
        elif word == "+" and 0 < i < len(words) - 1 and words[i - 1] in _MODIFIER_KEYS:
            left.add(i)  # a key combination: Ctrl+S
            right.add(i)
        elif word[:1] == "(" and len(word) > 1 and i and words[i - 1] == "]":
            left.add(i)  # Markdown's link, [text](https://...): its target one protected token
        elif word[-1:] == "=" and len(word) > 2 and _OPTION.match(word) and i < len(words) - 1:
            right.add(i)  # an option's value to fill in: --suffix=SUFFIX
        elif word == "[" and 0 < i < len(words) - 2 and words[i + 1] == "=" and _OPTION.match(words[i - 1]):
            left.add(i)  # an option's optional value: --color[=WHEN]
            right.update((i, i + 1))
        elif word == "/" and (_between_words(words, i) or 0 < i < len(words) - 1 and _OPTION.match(words[i - 1])
                              and _OPTION.match(words[i + 1])) or word == "–" and _between_numbers(words, i):
            left.add(i)  # and/or, shift/reduce, --title/-T, 2012–2021
            right.add(i)
        elif word in _WIDE_CLOSING or word in _BIDI_CLOSING or word in _BIDI_MARKS and i:
            left.add(i)
        elif word in _WIDE_OPENING or word in _BIDI_OPENING or word in _BIDI_MARKS:
            right.add(i)
            if word in _WIDE_OPENING:
                left.add(i)
        elif word in _EMPHASIS and i not in left and (k := _emphasis_end(words, i)) is not None:
            right.add(i)  # Markdown's **bold**, *italic*
            left.add(k)
        elif word == "<" and i + 2 < len(words) and words[i + 2] == ">":
            right.add(i)  # one token in angle brackets (<%s>, as GNU writes where its address goes)
            left.add(i + 2)
        elif word == "'" and _between_words(words, i) and words[i - 1][-1] in "sS" and words[i + 1][0].islower() \
                and words[i + 2:i + 3] != ["'"]:
            continue  # a plural's possessive (users' files), which Moses's detokeniser writes so
        elif word in _PAIRED_QUOTES:
            open_quotes.append((_PAIRED_QUOTES[word], i))
        elif word.startswith("`") and word.strip("`"):
            # Moses's tokeniser leaves a backquote on its word (`foo '): only the closing quote is to glue
            open_quotes.append((_PAIRED_QUOTES["`"], None))
        elif word[:1] == "'" and word[1:].isalpha() and word[1:].lower() not in _AFTER_APOSTROPHE:
            # and in English a straight quote on its word ('Copy To ' and), but a clitic's ('s, 'll)
            open_quotes.append((_PAIRED_QUOTES["'"], None))
        elif word[:1] in "<&" and empty_tag(word):
            left.add(i)  # a line break: window.<nl/>For
            right.add(i)
        elif (name := opening_tag(word)) is not None:
            open_tags.append((name, i))
        elif (name := closing_tag(word)) is not None:
            if i + 1 < len(words) and words[i + 1][:1] in "<&" and (
                    opening_tag(words[i + 1]) or closing_tag(words[i + 1]) or empty_tag(words[i + 1])):
                right.add(i)  # </para><para>
            for k in range(len(open_tags) - 1, -1, -1):
                if open_tags[k][0] == name:
                    right.add(open_tags[k][1])
                    left.add(i)
                    del open_tags[k:]
                    break
    return right, left


def _emphasis_end(words: Sequence[str], i: int) -> int | None:
    """The position of the emphasis mark that closes the one at ``i`` (the next token equal to it, with words
    between), or None: when there is none, the marks enclose a number (``2 * 3 * 4``: a product), or a single mark
    has its like outside it (Moses's ``* * Block * *`` of a spaced ``** Block **``)."""
    k = next((k for k in range(i + 1, len(words)) if words[k] == words[i]), None)
    if k is None or k == i + 1 or _NUMERIC.fullmatch(words[i + 1]) or _NUMERIC.fullmatch(words[k - 1]):
        return None
    if len(words[i]) == 1 and any(0 <= j < len(words) and words[j] == words[i] for j in (i - 1, k + 1)):
        return None
    return k


def _between_words(words: Sequence[str], i: int) -> bool:
    """Whether the tokens either side of position ``i`` end and start with a letter or digit."""
    return 0 < i < len(words) - 1 and words[i - 1][-1:].isalnum() and words[i + 1][:1].isalnum()


def _between_numbers(words: Sequence[str], i: int) -> bool:
    """Whether the tokens either side of position ``i`` end and start with a digit."""
    return 0 < i < len(words) - 1 and words[i - 1][-1:].isdigit() and words[i + 1][:1].isdigit()


def _has_letter(token: str) -> bool:
    return any(c.isalpha() for c in token)


def lowercased(words: Sequence[str], protected: ProtectedPatterns = BUILT_IN) -> list[str]:
    """``words`` lowercased, but the protected tokens (``%S`` is not ``%s``)."""
    return [w if protected.protects(w) else w.lower() for w in words]


def starts_lowercase(words: Sequence[str], protected: ProtectedPatterns = BUILT_IN) -> bool:
    """Whether the first letter of a line's tokens is lowercase: a message, a title or a list item that does
    not open a sentence. Protected tokens other than a word with an accelerator mark (``_Abrir``) do not
    count (``%s archivos`` starts lowercase)."""
    for word in words:
        if protected.protects(word) and protected.kind(word) != "acc":
            continue
        letter = next((c for c in decode(word) if c.isalpha()), None)
        if letter is not None:
            return letter.islower()
    return False


def detruecase(words: Sequence[str], protected: ProtectedPatterns = BUILT_IN, capitalise: bool = True) -> list[str]:
    """``words`` with a capital first letter on the first word of the line (unless not ``capitalise``) and the
    first word after a ``.``: the first token with a letter that is not protected, so that what comes before
    it (quotes, brackets, numbers, ``%s:``) keeps its place and a protected token its casing; a word with an
    accelerator mark is a word (``_open`` -> ``_Open``)."""
    out, start = [], capitalise
    for word in words:
        if start and _has_letter(word) and (not protected.protects(word) or protected.kind(word) == "acc"):
            first = next(i for i, c in enumerate(word) if c.isalpha())
            word = word[:first] + word[first].upper() + word[first + 1:]
            start = False
        out.append(word)
        if word == ".":
            start = True
    return out


class Truecaser:
    """Moses's truecaser (``train-truecaser.perl`` and ``truecase.perl``; learnt by sacremoses's
    ``MosesTruecaser``), but that a word written in lowercase stays lowercase.

    Moses gives a word whose written form it never saw its most frequent casing. A spelling its training text
    lacks then takes the casing of the form's other sightings: the 1909 Bible writes the preposition ``á``, so
    the only ``a`` it holds are capitals opening a quoted question (``: ¿ A quién``; Moses's truecaser counts
    the word after ``¿`` as inside a sentence, which keeps the quoted sentence's capital for the target), and
    modern ``a partir de`` came out ``A partir de``. Only position (a sentence start) or style (a title,
    capitals) capitalises a word that is not a name, and neither lowercases one, so a lowercase word is as the
    writer meant it, whatever the counts say: inside a sentence, and at its start, where writing it lowercase
    says so all the more (a message or a list item: ``abrir el archivo``).

    Protected tokens are left out of both learning and truecasing: they keep their casing and do not count
    as a sentence's first word.
    """

    def __init__(self, casing: dict[str, Counter], protected: ProtectedPatterns = BUILT_IN):
        self._casing = casing
        # the best casing of a word is its most frequent (ties: first seen); the others are "known", kept
        # where seen inside a sentence (as MosesTruecaser and truecase.perl build their model)
        self._best = {lower: counts.most_common(1)[0][0] for lower, counts in casing.items()}
        self._known = {word for counts in casing.values() for word, _ in counts.most_common()[1:]}
        self._protected = protected

    @classmethod
    def train(cls, sentences: Iterable[Sequence[str]], protected: ProtectedPatterns = BUILT_IN) -> "Truecaser":
        """Learn from tokenised sentences: each word's casings counted inside sentences (not a sentence's
        first word, which is capitalised whatever it is)."""
        from sacremoses import MosesTruecaser

        model = MosesTruecaser().train([[w for w in s if not protected.protects(w)] for s in sentences])
        return cls(model["casing"], protected)

    @classmethod
    def read(cls, path: str | os.PathLike, protected: ProtectedPatterns = BUILT_IN) -> "Truecaser":
        """Read a truecaser model in Moses's format (plain or gzip); FormatError names a malformed line."""
        casing: dict[str, Counter] = defaultdict(Counter)
        for number, line in read_lines(path):
            fields = line.split()
            if len(fields) % 2:
                raise FormatError(path, number, "expected 'word (count/total) word (count) ...' pairs")
            for word, count in zip(fields[::2], fields[1::2]):
                value = count.strip("()").split("/")[0]
                if not value.isdigit():
                    raise FormatError(path, number, f"count {count!r} of {word!r} is not '(N)' or '(N/TOTAL)'")
                casing[word.lower()][word] += int(value)
        return cls(casing, protected)

    def write(self, path: str | os.PathLike) -> None:
        """Write the model in Moses's format (``Word (count/total) word (count) ...`` per lowercased word;
        gzip-compressed if ``path`` ends in ``.gz``), atomically, words in sorted order so that the file is
        reproducible."""
        with atomic_write(path) as out:
            for lower in sorted(self._casing):
                ranked = self._casing[lower].most_common()  # ties in order of first sight, as the truecaser ranks
                total = sum(count for _, count in ranked)
                out.write(" ".join(f"{w} ({int(c)}/{int(total)})" if i == 0 else f"{w} ({int(c)})"
                                   for i, (w, c) in enumerate(ranked)) + "\n")

    def truecase(self, words: Sequence[str]) -> list[str]:
        """The truecased tokens of a tokenised sentence, as ``truecase.perl`` does but for the class's
        difference: a lowercase word stays; otherwise a sentence's first word takes its most frequent casing,
        and inside a sentence a word seen in its own casing keeps it, another known word takes its most
        frequent casing; an unknown word stays as it is."""
        out, first = [], True
        for word in words:
            if self._protected.protects(word):
                out.append(word)
                continue
            best = self._best.get(word.lower())
            if best is not None and not word.islower() and (first or word not in self._known):
                word = best
            out.append(word)
            if word in _SENTENCE_END:
                first = True
            elif word not in _DELAYED_START:
                first = False
        return out


@dataclass(frozen=True)
class TextForm:
    """How plain text in ``language`` becomes a model's tokens and back.

    ``tokenize``: Moses's tokeniser (else split at spaces); ``casing``: one of
    ``CASINGS``; ``truecaser``: the model file of the truecaser (``casing ==
    "truecase"``), read on first use; ``protected``: the spans kept whole and
    as they are; ``placeholders``: numbers and protected tokens become their
    class tokens, accelerator marks come off (``pbmt.base.placeholders``).
    """

    language: str
    tokenize: bool
    casing: str = "none"
    truecaser: str | os.PathLike | None = None
    protected: ProtectedPatterns = BUILT_IN
    placeholders: bool = False

    def __post_init__(self):
        if self.casing not in CASINGS:
            raise ValueError(f"unknown casing {self.casing!r}; known: {', '.join(CASINGS)}")
        if (self.casing == "truecase") != (self.truecaser is not None):
            raise ValueError("a truecaser model file is needed with casing 'truecase' and only then")

    @cached_property
    def _split(self) -> Callable[[str], list[str]]:
        return tokenizer(self.language, self.protected) if self.tokenize else tokens

    @cached_property
    def _truecaser(self) -> Truecaser:
        return Truecaser.read(self.truecaser, self.protected)

    @cached_property
    def _detokenize(self) -> Callable[[Sequence[str]], str]:
        return detokenizer(self.language, self.protected)

    def split(self, line: str) -> list[str]:
        """The tokens of a line of plain text (NFC-normalised), in their original casing."""
        return self._split(line)

    def case(self, words: Sequence[str]) -> list[str]:
        """Tokens in the model's casing (and with placeholders, the model's class tokens)."""
        if self.placeholders:
            words = unmarked(words, self.protected)
        if self.casing == "truecase":
            words = self._truecaser.truecase(words)
        elif self.casing == "lowercase":
            words = lowercased(words, self.protected)
        return classes(words, self.protected) if self.placeholders else list(words)

    def tokens(self, line: str) -> list[str]:
        """The model's tokens of a line of plain text."""
        return self.case(self.split(line))

    def text(self, words: Sequence[str], capitalise: bool = True) -> str:
        """A line of plain text from the model's tokens: detruecased (truecase; the first word only if
        ``capitalise``) and detokenised (tokenize)."""
        if self.casing == "truecase":
            words = detruecase(words, self.protected, capitalise)
        return self._detokenize(words) if self.tokenize else " ".join(words)
