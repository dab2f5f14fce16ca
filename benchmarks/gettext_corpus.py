"""Build a Spanish-English corpus of software messages from the gettext
catalogues (``.mo``) that Debian packages ship, split by package.

Real text that no one on the project wrote, in many small domains (desktop
applications, command-line tools, libraries, games of words such as
language and country names), full of what a translation system must not
damage: printf and positional placeholders, brace fields, markup, entities,
URLs, paths and accelerator marks. ``msgid`` is the English source text of the
software, ``msgstr`` its Spanish translation; the corpus is read the other
way round, Spanish to English.

Steps (each skipped when its output is there):

1. ``apt-get download`` every package of ``--packages`` (default: the list
   below) into ``OUT/debs`` (``apt-get update`` must have run once); a name
   that Debian does not have is reported and skipped.
2. The ``*/es/LC_MESSAGES/*.mo`` members of each package (read from
   ``dpkg-deb --fsys-tarfile``; only ``es``, not ``es_ES``/``es_MX``/...) go
   to ``OUT/mo/SOURCE/PACKAGE/``, where SOURCE is the Debian source package:
   ``nautilus`` and ``nautilus-data`` are one piece of software, and the split
   is by source package.
3. Each catalogue is read with ``polib`` and made into segment pairs
   (``messages``), then the source packages are split into train, dev and
   test (``split``), and ``OUT/{train,dev,test}.{es,en}`` are written with
   ``OUT/{train,dev,test}.origin`` (the source package and domain of each
   line) and ``OUT/stats.json``.

How entries become segments:

- the header (empty ``msgid``) and untranslated entries (empty ``msgstr``)
  are skipped. Fuzzy entries never reach a ``.mo`` file (``msgfmt`` leaves
  them out unless told ``--use-fuzzy``), so every entry read is a reviewed
  translation;
- a context (``msgctxt``) only tells the translator where a message is used:
  it is dropped, and the same message in several contexts becomes one pair
  when its translations agree (duplicates are removed per split);
- plural forms: Spanish catalogues have two (``nplurals=2; plural=n != 1``):
  ``msgstr[0]`` pairs with ``msgid`` and ``msgstr[1]`` with ``msgid_plural``;
  a catalogue with another count of forms pairs its first form with
  ``msgid`` and its last with ``msgid_plural``;
- the translators' credits (``translator-credits``, KDE's ``Your names`` /
  ``Your emails`` in the ``NAME OF TRANSLATORS`` contexts) are not
  translations and are skipped;
- multi-line messages (``\\n`` inside): when both sides have the same number
  of non-blank lines, each line is a segment paired with its counterpart;
  otherwise the whole message is one segment with its line breaks made
  spaces;
- whitespace: runs of spaces and tabs (column alignment in ``--help`` text)
  become one space and each segment is stripped; the characters themselves
  are kept as the catalogue has them (no Unicode normalisation: some
  catalogues are NFD, and the benchmark should see that);
- pairs with more than ``--max-words`` whitespace words on either side are
  dropped (clean-corpus-n.perl's limit; 80 by default).

The split: the source packages are ordered by the SHA-256 of
``SEED:name`` and taken in that order, to test until it has
``--test-messages`` segments, then to dev until ``--dev-messages``, then to
train until ``--train-messages`` (the rest are left out); a package with more than ``--max-share`` of the test (or dev)
target is passed over for those two, so that several pieces of software make
up the test set. Deterministic given the seed and the packages' versions.

    pip install -e '.[bench]'    # polib
    python benchmarks/gettext_corpus.py --out /work/realtext/corpus [--seed 1]

Prints the sizes and the packages of each split; docs/real-text.md has the
figures of the corpus measured there.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


PACKAGES = """
abiword-common accountsservice alpine apt aptitude-common ardour-data aspell atril-common audacity-data baobab
binutils-common bison brasero-common caja-common cheese-common claws-mail-i18n coreutils cpio cryptsetup-bin
cups-common dconf-editor debconf-i18n deja-dup desktop-file-utils diffutils dolphin dpkg e2fsprogs-l10n
engrampa-common enchant-2 eog evince-common evolution-common evolution-data-server-common fcitx5-data
file-roller filezilla-common findutils gcc-12-locales gdb gdm3 geany-common geary gedit-common gettext gimp
gimp-data gnome-boxes gnome-builder gnome-calculator gnome-calendar gnome-clocks gnome-contacts
gnome-control-center-data gnome-desktop3-data gnome-disk-utility gnome-keyring gnome-maps gnome-music
gnome-online-accounts gnome-photos gnome-session-common gnome-shell-common gnome-software-common
gnome-system-monitor gnome-terminal-data gnome-tweaks gnome-weather gnucash-common gnumeric-common gnupg-l10n
gparted gramps grep groff-base grub-common gstreamer1.0-plugins-base gstreamer1.0-plugins-good gucharmap
gvfs-common gwenview hexchat-common hplip-data ibus inkscape iso-codes kate kdevelop-l10n konsole
ktorrent libc-l10n libgdk-pixbuf2.0-common libglib2.0-data libgstreamer1.0-0 libgtk-3-common libgtk-4-common
libgtk2.0-common libgweather-4-common libkf5configwidgets-data libkf5coreaddons-data libkf5i18n-data
libkf5kiowidgets5 libkf5parts-data libkf5textwidgets-data libkf5widgetsaddons-data libkf5xmlgui-data
libnma-common libparted2 libreoffice-l10n-es libsane-common lvm2 lxpanel lxterminal lynx-common m4 make
man-db mate-control-center-common mate-desktop-common mate-panel-common mc-data meld mousepad mutt nano
nautilus nautilus-data neomutt network-manager network-manager-gnome okular orage packagekit parted passwd
patch pavucontrol pcmanfm pidgin-data pluma-common poedit-common polkitd procps psmisc pulseaudio recode
remmina-common rhythmbox-data ristretto rsync scribus-data seahorse sed shared-mime-info sharutils
shotwell-common simple-scan sudo synaptic system-config-printer-common tar texinfo thunar-data totem-common
transmission-common udisks2 util-linux-locales vim-common virt-manager vlc-l10n wget xdg-user-dirs
xfce4-panel xfce4-session xfce4-settings xfce4-terminal xkb-data yelp zenity-common
""".split()

LANGUAGE = "es"
CREDITS_IDS = {"translator-credits", "translator_credits", "translator-credits\n"}
CREDITS_CONTEXTS = {"NAME OF TRANSLATORS", "EMAIL OF TRANSLATORS"}
BLANK = re.compile(r"[ \t\u00a0]+")


@dataclass(frozen=True)
class Segment:
    """One segment pair: Spanish source, English reference, and where it comes from."""

    es: str
    en: str
    origin: str  # "SOURCE-PACKAGE/DOMAIN"


def download(packages: list[str], debs: Path) -> list[Path]:
    """``apt-get download`` each package not yet in ``debs``; returns the .deb files of the packages."""
    debs.mkdir(parents=True, exist_ok=True)
    files = []
    for name in packages:
        have = sorted(debs.glob(f"{name}_*.deb"))
        if not have:
            done = subprocess.run(["apt-get", "download", name], cwd=debs, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"skipped {name}: apt-get download failed: {done.stderr.strip().splitlines()[-1:]}",
                      file=sys.stderr)
                continue
            have = sorted(debs.glob(f"{name}_*.deb"))
        files.extend(have[-1:])
    return files


def source_package(deb: Path) -> str:
    """The Debian source package a .deb was built from (its own name when it has no Source field)."""
    fields = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Source"], capture_output=True, text=True,
                            check=True).stdout
    values = dict(line.split(": ", 1) for line in fields.splitlines() if ": " in line)
    return values.get("Source", values["Package"]).split()[0]


def extract_catalogues(deb: Path, mo_root: Path) -> list[Path]:
    """Write the package's ``es`` catalogues under ``mo_root/SOURCE/PACKAGE/`` and return them."""
    package = deb.name.split("_", 1)[0]
    folder = mo_root / source_package(deb) / package
    stamp = folder / ".extracted"
    if not stamp.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tar_bytes = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True,
                                   check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
            for member in tar:
                parts = member.name.split("/")
                if (member.isfile() and member.name.endswith(".mo") and len(parts) >= 3
                        and parts[-3] == LANGUAGE and parts[-2] == "LC_MESSAGES"):
                    (folder / parts[-1]).write_bytes(tar.extractfile(member).read())
        stamp.touch()
    return sorted(folder.glob("*.mo"))


def clean(text: str) -> str:
    """One segment's text: blanks and tabs collapsed to a space, stripped."""
    return BLANK.sub(" ", text).strip()


def segment_pairs(english: str, spanish: str) -> list[tuple[str, str]]:
    """A message and its translation as (es, en) segment pairs: line by line when the lines match up."""
    en_lines = [clean(line) for line in english.replace("\r\n", "\n").split("\n")]
    es_lines = [clean(line) for line in spanish.replace("\r\n", "\n").split("\n")]
    en_lines = [line for line in en_lines if line]
    es_lines = [line for line in es_lines if line]
    if len(en_lines) == len(es_lines):
        return list(zip(es_lines, en_lines))
    return [(" ".join(es_lines), " ".join(en_lines))]


def messages(catalogue: Path) -> list[tuple[str, str]]:
    """The (es, en) segment pairs of one ``.mo`` file, in the catalogue's order."""
    import polib  # the benchmarks' extra (pip install -e '.[bench]'): the other helpers load without it

    mo = polib.mofile(str(catalogue))
    pairs = []
    for entry in mo:
        if not entry.msgid or entry.obsolete or "fuzzy" in entry.flags:
            continue
        if entry.msgid in CREDITS_IDS or entry.msgctxt in CREDITS_CONTEXTS:
            continue
        if entry.msgid_plural:
            forms = [entry.msgstr_plural[k] for k in sorted(entry.msgstr_plural)]
            if not forms:
                continue
            candidates = [(entry.msgid, forms[0]), (entry.msgid_plural, forms[-1])]
        else:
            candidates = [(entry.msgid, entry.msgstr)]
        for english, spanish in candidates:
            if english.strip() and spanish.strip():
                pairs.extend(segment_pairs(english, spanish))
    return [(es, en) for es, en in pairs if es and en]


def split(units: dict[str, list[Segment]], seed: int, test_size: int, dev_size: int, train_size: int,
          max_share: float) -> dict[str, list[str]]:
    """Source package names for train, dev, test and unused (see the module's docstring)."""
    order = sorted(units, key=lambda name: hashlib.sha256(f"{seed}:{name}".encode()).hexdigest())
    names: dict[str, list[str]] = {"test": [], "dev": [], "train": [], "unused": []}
    filled = {"test": 0, "dev": 0, "train": 0}
    targets = {"test": test_size, "dev": dev_size, "train": train_size}
    for name in order:
        size = len(units[name])
        for part in ("test", "dev"):
            if filled[part] < targets[part] and size <= max_share * targets[part]:
                break
        else:
            part = "train" if filled["train"] < targets["train"] else "unused"
        names[part].append(name)
        if part != "unused":
            filled[part] += size
    return names


def unique(segments: list[Segment]) -> list[Segment]:
    """The segments without repeated (es, en) pairs, first occurrence kept."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for segment in segments:
        if (segment.es, segment.en) not in seen:
            seen.add((segment.es, segment.en))
            kept.append(segment)
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="corpus folder (outside the repository)")
    parser.add_argument("--packages", type=Path, help="file of Debian package names, whitespace-separated "
                        "(default: the list in this script)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the split (default: 1)")
    parser.add_argument("--test-messages", type=int, default=3000, help="test segments to aim at (default: 3000)")
    parser.add_argument("--dev-messages", type=int, default=500, help="dev segments to aim at (default: 500)")
    parser.add_argument("--train-messages", type=int, default=96000,
                        help="training segments to aim at; packages beyond it are left out (default: 96000)")
    parser.add_argument("--max-share", type=float, default=0.25,
                        help="largest share of the test or dev target one package may take (default: 0.35)")
    parser.add_argument("--max-words", type=int, default=80, help="longest segment kept, in words (default: 80)")
    args = parser.parse_args()

    packages = args.packages.read_text().split() if args.packages else PACKAGES
    debs = download(packages, args.out / "debs")
    units: dict[str, list[Segment]] = defaultdict(list)
    for deb in debs:
        for catalogue in extract_catalogues(deb, args.out / "mo"):
            source = catalogue.parent.parent.name
            origin = f"{source}/{catalogue.stem}"
            units[source].extend(Segment(es, en, origin) for es, en in messages(catalogue)
                                 if len(es.split()) <= args.max_words and len(en.split()) <= args.max_words)
    units = {name: unique(segments) for name, segments in units.items() if segments}
    names = split(units, args.seed, args.test_messages, args.dev_messages, args.train_messages, args.max_share)

    stats: dict = {"seed": args.seed, "packages_asked": len(packages), "debs": len(debs),
                   "source_packages": len(units), "unused": {name: len(units[name]) for name in sorted(names["unused"])},
                   "splits": {}}
    write_splits(args.out, units, names, stats, "source packages", lambda s: s.origin.split("/")[0])
    print(f"left out: {len(stats['unused'])} source packages, {sum(stats['unused'].values())} segments")


def write_splits(out: Path, units: dict[str, list[Segment]], names: dict[str, list[str]], stats: dict, unit: str,
                 unit_of: Callable[[Segment], str]) -> None:
    """Write ``OUT/{train,dev,test}.{es,en,origin}`` (each split's units' segments, repeats removed) and
    ``OUT/stats.json`` (``stats`` with each split's sizes, its units by ``unit_of`` a segment, and for dev and test
    the sources also in train), and print the sizes; ``unit`` names the units (``source packages``, ``pages``)."""
    key = unit.split()[-1]
    stats["splits"] = {}
    train_sources: set[str] = set()
    for part in ("train", "dev", "test"):
        segments = unique([s for name in sorted(names[part]) for s in units[name]])
        for side in ("es", "en", "origin"):
            (out / f"{part}.{side}").write_text("".join(getattr(s, side) + "\n" for s in segments), encoding="utf-8")
        if part == "train":
            train_sources = {s.es for s in segments}
        stats["splits"][part] = {
            "segments": len(segments),
            "words_es": sum(len(s.es.split()) for s in segments),
            "words_en": sum(len(s.en.split()) for s in segments),
            key: dict(sorted(Counter(unit_of(s) for s in segments).items())),
        }
        if part != "train":
            stats["splits"][part]["source_seen_in_train"] = sum(s.es in train_sources for s in segments)
    (out / "stats.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")
    for part, figures in stats["splits"].items():
        seen = f", {figures['source_seen_in_train']} sources also in train" if part != "train" else ""
        print(f"{part}: {figures['segments']} segments, {figures['words_es']} / {figures['words_en']} words (es / en), "
              f"{len(figures[key])} {unit}{seen}")
        if part != "train":
            print("  " + ", ".join(f"{name} {count}" for name, count in figures[key].items()))

if __name__ == "__main__":
    main()
