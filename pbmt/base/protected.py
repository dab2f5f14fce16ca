"""Protected tokens: the spans of plain text that tokenising must not split, casing must not touch and
detokenising must not space out.

Software messages and web text carry strings whose every byte matters:
printf and positional placeholders (``%s``, ``%1$d``, ``%.*s``, ``%1``),
brace placeholders (``{name}``, ``{0}``, ``${HOME}``), markup tags and
character entities (``<b>``, ``&lt;b&gt;``, ``&amp;``), URLs, e-mail
addresses, file paths and accelerator marks (``_File``, ``&Open``). Moses's
tokeniser cuts them into pieces (``% s``, ``< b >``, ``https : / /``) that
its detokeniser cannot put back. ``ProtectedPatterns`` finds them in a line:
each span becomes one token, whatever the tokeniser would do inside it.

Spans directly adjacent to each other or to letters, digits and ``_`` (``%d%%``,
``%sKB``, ``_%s``) are one token, so that no space can appear between them; an opening
tag and the word after it (``<b>Fondo``), and a word and the closing tag after
it (``Fondo</b>``), stay apart so the word between can be translated: the
detokeniser glues a paired tag back to its neighbour (``TagGlue``).

A token holds no space (the model's files separate tokens by spaces), so a
space or tab inside a protected span (``<a href="x">``) is carried in the
token form as a private-use character (``encode``) and given back by
``decode``. A tag that reads as one of the language model's special words
(``<s>``, ``</s>``, ``<unk>``, say in HTML text) carries its angle brackets
the same way, so the model never mistakes it for the sentence start, end or
an unknown word.

The user's own patterns (one Python regular expression a line, ``#``
comments; Moses's tokeniser takes such a file as ``-protected``) join the
built-in ones: at each position the longest match wins, the user's on a tie.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Callable

from pbmt.base.errors import FormatError
from pbmt.base.files import read_lines
from pbmt.base.vocab import SPECIAL_WORDS

#: Each built-in pattern with its class (the placeholder class a model with placeholders puts in its place):
#: ``url`` (URLs, e-mail addresses, file paths), ``tag`` (markup tags and entities), ``ph`` (printf, positional
#: and brace placeholders, ``key=value`` settings and command-line options ``--key=value``, ``-k=value`` with all
#: their leading dashes: a key of at most 100 characters, since each letter after a dot of a long dotted word is a
#: key's possible start, from which an unbounded key read the rest of the word), ``acc`` (a word with an accelerator
#: mark, ``_File``, ``&Open``, ``Arc_hivo``; an identifier such as ``snake_case`` or
#: ``AT&T`` looks the same), ``num`` (numbers joined by ``:`` or ``/``: times, dates, ratios, verses, an address
#: with its port, ``10:30:00``, ``31/12/2024``, ``16:9``, ``3:16-18``, ``192.168.0.1:8080``,
#: ``2024-03-15T10:30:00Z``, and MAC addresses: Moses's tokeniser splits them at the colon or slash, which a model
#: then translates, ``10:30`` coming out ``10, 30``; a signed number, ``+34`` of a phone number, ``+3``; a degree
#: sign with its scale and the number it touches, ``°C``, ``25°C``, ``45°``: Moses writes ``-5 ° C``), and what
#: Moses's tokeniser cuts into characters its detokeniser spaces apart: a CDATA section, comment, ``<!DOCTYPE>`` or
#: ``<?xml?>`` (``tag``; ``< ! [ CDATA [``), an operator (``!=``, ``==``, ``<=``, ``&&``, ``||``, ``->``, ``=>``,
#: ``::``, ``//``: ``a ! = b``), ``C++``, ``C#``, a version and later ones, ``GPLv3+``, and a hashtag (``ph``), a mention ``@name`` (``url``); a Markdown
#: link's target with its parentheses, ``[text](URL)``, so no phrase takes the ``)`` from its ``.`` (``url``); a
#: string's escape, ``\"``, ``\n``, ``\\``, ``\u00e9`` (``ph``; Moses: ``\ "``); an identifier with underscores
#: the accelerator pattern does not take, ``__init__``, ``__tls_get_addr``, ``DST__K_SET_PC`` (``ph``; Moses:
#: ``_ _ tls _ get _ addr``); any other one-letter conversion, strftime's ``%Y-%m-%d``, ``%H:%M`` and binutils'
#: ``%B``, GCC's ``%qT``, ``%q#D``, ``%<%s%>`` (``ph``; Moses: ``% B``, ``% qT``); a code point, ``U+00E9``,
#: ``U+%04X`` (``ph``; Moses: ``U + 00E9``); a setting's quoted value, ``--atime-preserve='system'`` (Moses:
#: ``= 'system'``); an option's dashes before a placeholder, ``--%s``, ``-%c`` (``ph``; Moses: ``-- %s``); a call or a
#: manual page's name with its section, ``stat(2)``, ``open()``, ``stat(%s)``, ``%1(%2)`` (``ph``; Moses: ``stat ( 2
#: )``, which its detokeniser writes ``stat (2)``), but not a word's optional ending, ``volume(s)``; a hyphenated word
#: with an accelerator mark, ``Auto-hi_de``, ``_Read-Only`` (``acc``; Moses: ``Auto- hi_de``); a setting whose key
#: or value is a placeholder, ``keyword=%s``, ``%s=%s``, and a range, ``%s..%s``, ``1..10`` (``ph``; Moses: ``%s =
#: %s``, ``%s .. %s``, which its detokeniser writes ``%s.. %s``); a command-line option, ``-H``, ``--follow``,
#: ``-print0``, but not a word between dashes, ``--More--`` (``ph``: its letters' case is its meaning, where the
#: truecaser made ``-H`` ``-h``); an option's equals sign before a value in capitals, ``--suffix=`` of
#: ``--suffix=SUFIJO``, whose value is a name to translate, ``SUFFIX`` (``ph``; a value not in capitals stays with its
#: option, ``--owner=paquete``, ``Type=LINK``). The longest match
#: at a position wins, the earlier pattern on a tie.
_END = r"[^\s<>\"'«»“”‘’.,;:!?)\]}]"  # a URL's last character: not the punctuation after it
_NUMBER = r"\d+(?:[.,]\d+)*"  # a number in a number expression: 10, 1.5, 192.168.0.1
_OPTION_IS = r"-+[A-Za-z][\w.-]{0,99}="  # an option and its equals sign: --suffix=
_METAVARIABLE = r"[A-ZÁÉÍÓÚÑ][A-ZÁÉÍÓÚÑ0-9_-]*[A-ZÁÉÍÓÚÑ0-9](?![\w.:/%-])"  # a value to fill in: NUM, SUFIJO
_ESCAPE = r"\\(?:[\\\"'nrt0abefv]|u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2})"  # a string's escape: \", \n, \a, \\, \u00e9
BUILT_IN = (
    ("url", r"(?:[A-Za-z][A-Za-z0-9+-]{1,15}://|www\.)[^\s<>\"'«»“”‘’]*" + _END),
    ("url", r"(?:mailto:)?[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    ("url", r"<(?:mailto:)?[\w.+-]+@[\w-]+(?:\.[\w-]+)+>|<(?:https?|s?ftp)://[^\s<>]+>"),
    ("tag", r"&lt;/?[A-Za-z][\w:.-]*(?:\s[^<>]*?)?/?&gt;"),
    ("tag", r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*?)?/?>"),
    ("tag", r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});"),
    ("url", r"(?<![\w/.~])(?:~|\.{1,2})?(?:/[\w.+@~%-]*[\w+@~%-])+/?"),
    ("url", r"(?<!\w)[A-Za-z]:\\(?:[\w.+@~-]*[\w+@~-]\\?)*"),
    ("ph", r"%\([\w.-]+\)[-+#0]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa%]"),
    ("ph", r"%(?:\d+\$)?[-+#0']*(?:\d+|\*(?:\d+\$)?)?(?:\.(?:\d+|\*(?:\d+\$)?))?"
           r"(?:hh|h|ll|l|L|q|j|z|Z|t|I64|I32|I)?[diouxXeEfFgGaAcCsSpn%]"),
    ("ph", r"%L?\d+|%\{\w+\}"),
    ("ph", r"\{\{\s*[\w.]+\s*\}\}|\$\{[^{}\s]+\}|\{[A-Za-z_][\w.\[\]-]*(?:![rsa])?(?::[^{}\s]*)?\}"
           r"|\{\d+(?:[,:][^{}\s]*)?\}|\{\}|\$[A-Za-z_]\w*"),
    ("acc", r"(?<![\w&-])(?:[_&](?=[^\W\d_])\w+(?:-[^\W_]+)*|[^\W_]+(?:-[^\W_]+)*(?:_|&(?!\w+;))[^\W_]\w*"
            r"(?:-[^\W_]+)*)"),
    ("ph", r"(?<![\w=-])(?!" + _OPTION_IS + _METAVARIABLE + r")-*(?:[A-Za-z][\w.-]{0,99}|%[a-z]{1,2})="
           r"(?:[\w.:/%-]*\w|'[^'\s]*'|\"[^\"\s]*\")"),
    ("ph", r"(?<![\w=-])" + _OPTION_IS + "(?=" + _METAVARIABLE + ")"),
    ("ph", r"(?<![\w.%])(?:%[a-z]{1,2}|\d+)\.\.(?:%[a-z]{1,2}|\d+)(?![\w.])"),
    ("ph", r"(?<![\w-])--?[^\W\d_](?:[\w-]{0,99}\w)?(?![\w-])"),
    ("num", rf"(?=[-\d])(?:(?<![\w.-])-)?(?:\d+-\d+-\d+T)?{_NUMBER}(?:[:/]{_NUMBER})+(?:-\w+(?:[:/.,]\d+)*)*"),
    ("num", r"(?<![\w:])[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}(?![\w:])"),
    ("num", r"(?<![\w+])\+\d+(?:[-.]\d+)*"),
    ("num", r"°[CFK]?(?![^\W\d_])"),
    ("tag", r"<!\[CDATA\[.*?\]\]>|<!--.*?-->|<![A-Za-z][^<>]*>|<\?[A-Za-z][^<>]*?\?>"),
    ("ph", r"(?<![-!=<>&|:/+*])(?:===?|!==?|<=|>=|&&|\|\||->|=>|::|//)(?![=>&|:/])"),
    ("ph", r"(?<![\w+])[A-Za-z][\w.]{0,99}\d\+(?![\w+])|(?<![\w+])[A-Za-z]\+\+|(?<![\w#])[A-Za-z]#(?![\w#])|(?<![\w#&])#[^\W_]\w*"),
    ("url", r"(?<![\w@.+-])@[^\W\d]\w*"),
    ("url", r"(?<=\])\((?:[^\s()<>]|\([^\s()<>]*\))+\)"),
    ("ph", _ESCAPE),
    ("ph", r"(?<![\w+])U\+(?:[0-9A-Fa-f]{4,6}(?![\w+])|(?=%))"),
    ("ph", r"(?<![\w-])--?(?=%)"),
    ("ph", r"(?<![\w&])(?=\w*[^\W_])\w*_\w*(?:\.\w+)*"),
    ("ph", r"(?<![\d%])%(?:q?[+#]*[A-Za-z](?:[-:/.]?%[A-Za-z])*(?![A-Za-z])|[<>])"),
    ("ph", r"(?<![\w.(%])(?:%\d+|[^\W\d][\w.-]{0,99})\((?:\d[a-z]{0,4}|%\d+|%[-#0-9.*]*[hlqjzt]{0,2}[A-Za-z]|)\)"),
)
#: Built-in patterns that can start anywhere inside a run of their first characters (an e-mail address's name), each
#: with a copy that starts only where such a run does: a search tries every position of a run and reads it to its
#: end each time, so a 40,000-letter word took 10 s to tokenise, a 2 MB one hours. The copy finds the same leftmost
#: match at every position but the search's first, which the pattern itself is matched at.
_RUN_STARTS = {r"(?:mailto:)?[\w.+-]+@[\w-]+(?:\.[\w-]+)+": r"(?:mailto:)?(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"}
#: The class of a user's pattern.
USER_CLASS = "ph"
#: Where a space or tab inside a protected token (or a special word's angle bracket) goes in the token form: this
#: offset plus its code point.
_SPACE_OFFSET = 0xE000
_ENCODED = re.compile("[\uE009\uE020\uE03C\uE03E]")
_OPENING_TAG = re.compile(r"(?:<|&lt;)([A-Za-z][\w:.-]*)(?:\s[^<>]*?)?(?<!/)(?:>|&gt;)")
_CLOSING_TAG = re.compile(r"(?:<|&lt;)/([A-Za-z][\w:.-]*)\s*(?:>|&gt;)")
#: An element with no content: ``<nl/>``, ``<br />``, ``<img src="x"/>``, and HTML's ``<br>``, which has no closing tag.
_EMPTY_TAG = re.compile(r"(?:<|&lt;)(?:[A-Za-z][\w:.-]*(?:\s[^<>]*?)?/|[Bb][Rr]\s*)(?:>|&gt;)")


def encode(span: str) -> str:
    """A protected span as one token: its spaces and tabs as private-use characters, and the angle brackets
    of a span that is one of the LM's special words too."""
    if span in SPECIAL_WORDS:
        span = span.replace("<", chr(_SPACE_OFFSET + ord("<"))).replace(">", chr(_SPACE_OFFSET + ord(">")))
    return span.replace(" ", chr(_SPACE_OFFSET + 32)).replace("\t", chr(_SPACE_OFFSET + 9))


def decode(token: str) -> str:
    """The text of a token ``encode`` made (any other token as it is)."""
    return _ENCODED.sub(lambda m: chr(ord(m.group()) - _SPACE_OFFSET), token)


def opening_tag(token: str) -> str | None:
    """The element name of an opening tag (``<b>``, ``&lt;a href=...&gt;``; not ``<br/>``), else None."""
    m = _OPENING_TAG.fullmatch(decode(token))
    return m.group(1).lower() if m else None


def closing_tag(token: str) -> str | None:
    """The element name of a closing tag (``</b>``, ``&lt;/b&gt;``), else None."""
    m = _CLOSING_TAG.fullmatch(decode(token))
    return m.group(1).lower() if m else None


def empty_tag(token: str) -> bool:
    """Whether a token is an element with no content (``<nl/>``, ``<br/>``, ``<br>``): a line break in KDE's and
    HTML's messages, written against its neighbours (``window.<nl/>For``) and a token of its own."""
    return _EMPTY_TAG.fullmatch(decode(token)) is not None


@dataclass(frozen=True)
class Span:
    """Characters ``start`` to ``end`` of a line (a half-open range) are one protected token of class ``kind``."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class ProtectedPatterns:
    """The built-in patterns and the user's ``extra`` ones (regular expressions, which win a tie), and, when
    they came from a file, its ``path``."""

    extra: tuple[str, ...] = ()
    path: str | None = None

    @classmethod
    def read(cls, path: str | os.PathLike) -> "ProtectedPatterns":
        """Patterns from a file: one regular expression a line; blank lines and lines starting with ``#`` are
        skipped. FormatError names a line that is not a valid regular expression or matches the empty string."""
        extra = []
        for number, line in read_lines(path):
            pattern = line.strip()
            if not pattern or pattern.startswith("#"):
                continue
            try:
                compiled = re.compile(pattern)
            except re.error as err:
                raise FormatError(path, number, f"not a regular expression: {err}") from None
            if compiled.fullmatch(""):
                raise FormatError(path, number, f"{pattern!r} matches the empty string")
            extra.append(pattern)
        return cls(tuple(extra), os.fspath(path))

    def __getstate__(self) -> dict:
        return {"extra": self.extra, "path": self.path}  # not the compiled patterns and the cache

    @cached_property
    def _patterns(self) -> tuple[tuple[str, re.Pattern, re.Pattern], ...]:
        """Each pattern's class, the pattern, and the pattern to search with beyond a search's first position
        (``_RUN_STARTS``; else the pattern itself)."""
        return tuple((USER_CLASS, re.compile(p), re.compile(p)) for p in self.extra) + tuple(
            (kind, re.compile(p), re.compile(_RUN_STARTS.get(p, p))) for kind, p in BUILT_IN)

    @cached_property
    def _any(self) -> re.Pattern:
        return re.compile("|".join(f"(?:{later.pattern})" for _, _, later in self._patterns))

    def spans(self, line: str) -> list[Span]:
        """The protected tokens of ``line``, left to right: at each position the longest match of any
        pattern (the first pattern's on a tie), then adjacent spans and the letters and digits they touch
        joined into one (see the module's docstring). Each pattern's next match is searched for again only
        once the spans found have passed its start, so a line is read about once per pattern."""
        if not self._any.search(line):
            return []
        found: list[Span] = []
        position = 0
        ahead: list[re.Match | None | bool] = [False] * len(self._patterns)  # False: not searched yet
        while position < len(line):
            best = None
            for index, (kind, pattern, later) in enumerate(self._patterns):
                m = ahead[index]
                if m is False or (m is not None and m.start() < position):
                    m = ahead[index] = (pattern.search(line, position) if later is pattern
                                        else pattern.match(line, position) or later.search(line, position + 1))
                if m and m.end() > m.start() and (best is None or (m.start(), m.start() - m.end())
                                                  < (best.start, best.start - best.end)):
                    best = Span(m.start(), m.end(), kind)
            if best is None:
                break
            found.append(best)
            position = best.end
        return _joined(line, found)

    def protects(self, token: str) -> bool:
        """Whether a token holds protected text (so casing and the detokeniser leave it as it is)."""
        return self._protects(token)

    @cached_property
    def _protects(self) -> Callable[[str], bool]:
        # asked of every token of a corpus, most of them many times over
        @lru_cache(maxsize=1 << 16)
        def protects(token: str) -> bool:
            text = decode(token)
            return text != token or bool(self._any.search(text))

        return protects

    def kind(self, token: str) -> str | None:
        """The class of the first protected span of a token (``url``, ``tag``, ``ph``, ``acc``, ``num``), or None."""
        spans = self.spans(decode(token))
        return spans[0].kind if spans else None


def _joins(char: str) -> bool:
    """Whether a character touching a protected span is part of its token: a letter, a digit or ``_`` (an
    accelerator mark before a placeholder: ``_%s``)."""
    return char.isalnum() or char == "_"


def _extension(line: str, dot: int, span: str) -> bool:
    """Whether the ``.`` at ``dot``, after the protected ``span``, starts a file name's extension (a letter or digit
    after it: ``%s.txt``, where Moses's tokeniser writes ``%s .txt``; a closing tag ends there)."""
    return dot + 1 < len(line) and line[dot + 1].isalnum() and not closing_tag(span)


def _joined(line: str, spans: list[Span]) -> list[Span]:
    """``spans`` with touching spans merged and each extended over the letters, digits and ``_`` it touches and a
    file name's extension after it (``%s.txt``), except where an opening tag meets what follows it or a closing tag
    what precedes it, and for an empty element (``<nl/>``) and an opening tag after a closing one (``</para><para>``):
    a word touching them is translated, and the tags are paired, only as tokens of their own; nor does an option's
    equals sign take in the value after it (``--suffix=`` ``SUFIJO``)."""
    out: list[Span] = []
    for span in spans:
        start, end = span.start, span.end
        text = line[start:end]
        alone = empty_tag(text)
        if not closing_tag(text) and not alone:
            while start > 0 and _joins(line[start - 1]) and (not out or start > out[-1].end):
                start -= 1
        if not opening_tag(text) and not alone and not (text[0] == "-" and text[-1] == "="):
            while end < len(line) and (_joins(line[end]) or line[end] == "." and _extension(line, end, text)):
                end += 1
        if out and start <= out[-1].end and not alone and not closing_tag(text) and not _apart(line, out[-1], text):
            out[-1] = Span(out[-1].start, max(end, out[-1].end), out[-1].kind)
        else:
            out.append(Span(start, end, span.kind))
    return out


def _apart(line: str, span: Span, text: str) -> bool:
    """Whether the protected ``text`` that touches ``span`` of ``line`` stays a token of its own: after an opening
    tag or an empty element, and an opening tag after a closing one."""
    if _opens(line, span):
        return True
    before = line[span.start:span.end]
    return line[span.end - 1] in ">;" and (empty_tag(before) or closing_tag(before) is not None
                                            and opening_tag(text) is not None)


def _opens(line: str, span: Span) -> bool:
    """Whether ``span`` of ``line`` is an opening tag; its first and last characters answer most cases, so that a
    long run of joined spans is not decoded again at every span it takes in."""
    return line[span.start] in "<&\uE03C" and line[span.end - 1] in ">;\uE03E" \
        and opening_tag(line[span.start:span.end]) is not None
