"""Build a Spanish-English corpus of manual pages, split by page: Debian's ``manpages-es`` against the
English pages the system has installed.

A second kind of real text beside ``gettext_corpus.py``'s messages: documentation, in paragraphs of
whole sentences, full of what a translation must give back as written: options (``--bytes=NUM``,
``-c``), synopses (``[OPCIÓN]...``), cross-references (``stat(2)``), function calls (``open()``),
constants (``EINVAL``, ``O_RDONLY``), headers (``<stdio.h>``), paths and environment variables.
``manpages-es`` is made with po4a from the English pages, paragraph by paragraph, so a translated page
keeps its original's requests (``.SH``, ``.PP``, ``.TP``...) in the same order.

Steps (each skipped when its output is there):

1. ``apt-get download manpages-es`` into ``OUT/debs`` (``apt-get update`` must have run once) and its
   ``usr/share/man/es`` unpacked to ``OUT/es``.
2. Each Spanish page whose English page is at the same place under ``--english`` (default
   ``/usr/share/man``: the pages of the packages installed, ``manpages`` and ``manpages-dev`` among them;
   a page missing there is counted and skipped) is read as a list of blocks (``blocks``): each request
   that breaks a paragraph (``.SH``, ``.PP``, ``.TP``, ``.IP``...) starts a block, and a block's text
   is its lines joined, the font requests (``.B``, ``.BR``...) and escapes (``\\fB``, ``\\-``,
   ``\\(em``...) made into the characters a reader sees. Text in no-fill mode (``.nf``, ``.EX``: code
   and examples), tables (``.TS``), macro definitions and conditionals are left out.
3. The two pages' blocks are paired by the sequence of their requests (difflib's matching blocks:
   where the translation's version of the page differs, the blocks that differ are left out); a paired
   block is one segment, or one a sentence when both sides have as many sentences; a segment of three
   words or more that is the same on both sides (a paragraph po4a left untranslated) and a segment holding
   a groff escape this script cannot read is left out (``escaped`` in the stats).
4. The pages are split into train, dev and test as ``gettext_corpus.py`` splits source packages
   (``--seed``, the SHA-256 order), and ``OUT/{train,dev,test}.{es,en,origin}`` and ``OUT/stats.json``
   are written.

    python benchmarks/manpage_corpus.py --out /work/realtext/man [--seed 1]
    python benchmarks/bench_real_text.py --corpus /work/realtext/man --work /work/realtext/man-run --tune

Prints the sizes and the pages of the dev and test splits; docs/real-text.md has the figures.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gettext_corpus import Segment, clean, split, unique, write_splits  # noqa: E402  (a sibling script, not a package)

PACKAGE = "manpages-es"

# Requests that end a paragraph and start a block; the block's kind is the request.
BREAKS = {"SH", "SS", "PP", "P", "LP", "TP", "TQ", "IP", "HP", "RS", "RE", "sp", "br", "SY", "YS", "OP",
          "UR", "UE", "MT", "ME", "in", "ti", "bp", "ne"}
# Requests that switch fonts: their arguments are text; the alternating ones join their arguments.
FONTS = {"B": False, "I": False, "SM": False, "SB": False,
         "BR": True, "BI": True, "IB": True, "IR": True, "RB": True, "RI": True}
NO_FILL = {"nf": "fi", "EX": "EE", "TS": "TE", "de": "..", "EQ": "EN", "PS": "PE"}
NAMED = {"em": "—", "en": "–", "bu": "•", "aq": "'", "dq": '"', "lq": "“", "rq": "”", "oq": "‘", "cq": "’",
         "co": "©", "rg": "®", "tm": "™", "mu": "×", "de": "°", "hy": "-", "ti": "~", "ha": "^", "ga": "`",
         "ua": "↑", "da": "↓", "->": "→", "<-": "←", ">=": "≥", "<=": "≤", "!=": "≠", "+-": "±", "sc": "§",
         "Fo": "«", "Fc": "»", "fo": "‹", "fc": "›", "R": "®", "lq ": "“", "rs": "\\", "ba": "|", "or": "|",
         "at": "@", "sh": "#", "Do": "$", "pc": "·", "ss": "ß", "ul": "_", "ru": "_", "sl": "/", "tx": "TeX",
         "Tm": "™"}
ESCAPE = re.compile(r"\\(?:\((..)|\[([^\]]*)\]|\*\((..)|\*\[([^\]]*)\]|\*(.)|f(?:\(..|\[[^\]]*\]|.)"
                    r"|([-e\\ ~,/&:%c|^0'`.]))")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[¿¡\"“«(]?[A-ZÁÉÍÓÚÑÜ])")
UNKNOWN = "\0"  # what an escape with no reading becomes: its segment is left out


def unescape(text: str) -> str:
    """A text line's escapes as the characters a reader sees (fonts and zero-width escapes dropped)."""
    def one(match: re.Match) -> str:
        name = match.group(1) or match.group(2) or match.group(3) or match.group(4) or match.group(5)
        if name is not None:
            if re.fullmatch(r"u[0-9A-F]{4,6}", name):
                return chr(int(name[1:], 16))
            return NAMED.get(name, UNKNOWN)
        plain = match.group(6)
        if plain is None:
            return ""  # a font change
        return {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "'": "´", "`": "`", ".": "."}.get(plain, "")
    return ESCAPE.sub(one, text)


def arguments(rest: str) -> list[str]:
    """A request's arguments: blank-separated, a double-quoted one may hold blanks."""
    return [quoted if quoted or bare == "" else bare for quoted, bare in re.findall(r'"((?:[^"]|"")*)"?|(\S+)', rest)]


def blocks(source: str) -> list[tuple[str, str]]:
    """A page's blocks as (request kind, text): see the module's docstring."""
    found: list[tuple[str, list[str]]] = [("start", [])]
    skip_until = None
    for line in source.replace("\r\n", "\n").split("\n"):
        if skip_until is not None:
            if line.strip().lstrip(".'").split(None, 1)[:1] == [skip_until] or line.strip() == skip_until:
                skip_until = None
                found.append(("fill", []))
            continue
        if line.startswith((".\\\"", "'\\\"", '\\"')) or line.strip() in (".", "'"):
            continue
        if line.startswith((".", "'")):
            request, _, rest = line[1:].strip().partition(" ")
            request = request.strip()
            if request in NO_FILL:
                skip_until = NO_FILL[request]
                continue
            if request in BREAKS:
                found.append((request, []))
                if request in ("SH", "SS") and rest.strip():
                    found[-1][1].append(" ".join(arguments(rest)))
                    found.append((request + "-body", []))
                elif request == "IP" and arguments(rest) and re.search(r"\w", unescape(arguments(rest)[0])):
                    found[-1][1].append(arguments(rest)[0])
                    found.append(("IP-body", []))
                continue
            if request in FONTS:
                words = arguments(rest)
                found[-1][1].append(("" if FONTS[request] else " ").join(words))
                continue
            if request in ("TH", "so", "nh", "hy", "ad", "na", "ft", "ps", "vs", "ll", "ds", "nr", "if", "ie",
                           "el", "ig", "tr", "mso", "pd", "PD", "UC", "AT", "DT", "cs", "ss", "lf", "fam", "hw",
                           "ta", "ev", "rm", "als", "rn", "ce", "cu", "ul", "fl", "ch", "wh", "it", "nx", "rd",
                           "tm", "ab", "ex", "lg", "kern", "char", "nop", "\\}"):
                continue
            found.append(("unknown", []))
            continue
        found[-1][1].append(line)
    return [(kind, clean(unescape(" ".join(lines)))) for kind, lines in found]


def paired_blocks(spanish: str, english: str) -> list[tuple[str, str]]:
    """The (es, en) texts of the blocks the two pages share, matched by their sequence of requests."""
    es_blocks, en_blocks = blocks(spanish), blocks(english)
    matcher = difflib.SequenceMatcher(a=[k for k, _ in es_blocks], b=[k for k, _ in en_blocks], autojunk=False)
    pairs = []
    for i, j, size in matcher.get_matching_blocks():
        for k in range(size):
            (kind, es), (_, en) = es_blocks[i + k], en_blocks[j + k]
            if es and en and kind != "unknown":
                pairs.append((es, en))
    return pairs


def segments(es: str, en: str) -> list[tuple[str, str]]:
    """A paired block as segments: one a sentence when both sides have as many, else the whole block."""
    es_sentences, en_sentences = SENTENCE_END.split(es), SENTENCE_END.split(en)
    if len(es_sentences) == len(en_sentences):
        return list(zip(es_sentences, en_sentences))
    return [(es, en)]


def download(out: Path) -> Path:
    """``OUT/es``: the Spanish pages of ``manpages-es``, downloaded and unpacked once."""
    pages = out / "es"
    if not (pages / ".extracted").exists():
        debs = out / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        if not list(debs.glob(f"{PACKAGE}_*.deb")):
            subprocess.run(["apt-get", "download", PACKAGE], cwd=debs, check=True, capture_output=True)
        deb = sorted(debs.glob(f"{PACKAGE}_*.deb"))[-1]
        unpacked = out / "unpacked"
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
        (unpacked / "usr" / "share" / "man" / "es").rename(pages)
        (pages / ".extracted").touch()
    return pages


def read_page(path: Path) -> str:
    """A page's groff source (gzip-compressed or not), as UTF-8 with bad bytes replaced."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="corpus folder (outside the repository)")
    parser.add_argument("--english", type=Path, default=Path("/usr/share/man"),
                        help="the English pages' folder (default: /usr/share/man)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the split (default: 1)")
    parser.add_argument("--test-segments", type=int, default=2000, help="test segments to aim at (default: 2000)")
    parser.add_argument("--dev-segments", type=int, default=500, help="dev segments to aim at (default: 500)")
    parser.add_argument("--max-share", type=float, default=0.25,
                        help="largest share of the test or dev target one page may take (default: 0.25)")
    parser.add_argument("--max-words", type=int, default=80, help="longest segment kept, in words (default: 80)")
    args = parser.parse_args()

    spanish_root = download(args.out)
    units: dict[str, list[Segment]] = defaultdict(list)
    counts: Counter = Counter()
    seen_pages: set[tuple[str, str]] = set()
    for spanish in sorted(spanish_root.rglob("*.gz")):
        relative = spanish.relative_to(spanish_root)
        english = args.english / relative
        if not english.exists():
            counts["pages without English"] += 1
            continue
        texts = read_page(spanish), read_page(english)
        if texts in seen_pages:  # another name of a page read already (egrep.1 and grep.1)
            counts["pages repeated"] += 1
            continue
        seen_pages.add(texts)
        counts["pages paired"] += 1
        page = relative.name.removesuffix(".gz")
        for block_es, block_en in paired_blocks(*texts):
            for es, en in segments(block_es, block_en):
                if UNKNOWN in es or UNKNOWN in en:
                    counts["escaped"] += 1
                elif es == en and len(es.split()) >= 3:  # a paragraph po4a left untranslated
                    counts["untranslated"] += 1
                elif len(es.split()) > args.max_words or len(en.split()) > args.max_words:
                    counts["too long"] += 1
                else:
                    units[page].append(Segment(es, en, page))
    if not counts["pages paired"]:
        sys.exit(f"manpage_corpus.py: no English page under {args.english} has a Spanish page in {spanish_root}")
    units = {name: unique(found) for name, found in units.items() if found}
    total = sum(len(found) for found in units.values())
    names = split(units, args.seed, args.test_segments, args.dev_segments, total, args.max_share)

    stats: dict = {"seed": args.seed, "package": PACKAGE, "english": str(args.english), **counts}
    print(", ".join(f"{key} {value}" for key, value in counts.items()))
    write_splits(args.out, units, names, stats, "pages", lambda segment: segment.origin)

if __name__ == "__main__":
    main()
