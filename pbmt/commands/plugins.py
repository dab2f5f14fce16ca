"""``--plugins FILE [FILE ...]`` of ``pbmt tune``, ``pbmt optimize`` and ``pbmt rescore``: Python files of one's
own that add tuners and rescoring features to pbmt's.

``pbmt.commands.cli`` runs the files (``pbmt.base.feature_modules.run_module``) before it builds the verb's
parser, so that what they add is there as if pbmt had it: in ``--help``, among ``--algorithm``'s choices with
its options, among ``--feature``'s kinds.

- Each class a file defines that subclasses ``pbmt.tune.tuner.Tuner`` and sets a ``name`` of its own is a
  tuner (``pbmt.tune.registry.add_tuner``; docs/writing-a-tuner.md). A class without a name of its own (a
  base of the file's tuners) is not.
- The kinds a file registers with ``pbmt.features.register`` (docs/global-features.md) are rescoring features
  of ``pbmt rescore --feature`` and global features of SampleRank.

A file that is missing, not ``.py``, raises while it runs, or adds neither is a one-line error naming it (and,
for what it raised, its line). Running a plugin runs its code, as importing it would: give files you trust.
"""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path
from typing import Sequence

from pbmt.base.errors import PbmtError, UsageError
from pbmt.base.feature_modules import error_place, run_module
from pbmt.features import KINDS
from pbmt.tune.registry import add_tuner
from pbmt.tune.tuner import Tuner

FLAG = "--plugins"

_ADDS: dict[Path, tuple[str, ...]] = {}  # resolved path of a plugin run here -> the tuners and kinds it added


def add_plugins_argument(parser: argparse.ArgumentParser) -> None:
    """``--plugins FILE [FILE ...]`` (the files are run before the parser is built: ``plugin_files``)."""
    parser.add_argument(FLAG, nargs="+", action="extend", default=[], metavar="FILE",
                        help="Python files of your own that add tuners (Tuner classes: docs/writing-a-tuner.md) and "
                        "rescoring features (pbmt.features.register: docs/global-features.md); run before the "
                        "options are read, so --help lists what they add")


def plugin_files(argv: Sequence[str]) -> list[str]:
    """The files ``--plugins`` names in ``argv`` (``--plugins A B``, ``--plugins=A``, repeatable), up to a bare
    ``--``: read before argparse, which needs what they add to build the parser. A ``--plugins`` without a file
    is left to argparse to refuse."""
    files, taking = [], False
    for word in argv:
        if word == "--":
            break
        if word.startswith(FLAG + "="):
            files.append(word.partition("=")[2])
        elif word != FLAG and taking and not word.startswith("-"):
            files.append(word)
            continue
        taking = word == FLAG
    return files


def load_plugins(files: Sequence[str]) -> None:
    """Run each of ``files`` (once per process) and add the tuners it defines; UsageError or PbmtError, one
    line naming the file, for a file that is missing, not Python, fails or adds nothing."""
    for name in files:
        path = Path(name).expanduser()
        if not path.is_file():
            raise UsageError(f"{FLAG} {name}: " + ("is a directory, expected a Python file" if path.is_dir()
                                                   else "no such file"))
        if path.suffix != ".py":
            raise UsageError(f"{FLAG} {name}: not a Python file (.py)")
        path = path.resolve()
        if path in _ADDS:
            continue
        kinds = set(KINDS)
        try:
            module = run_module(path, f"the plugin {name} ({FLAG})")
        except (Exception, SystemExit) as err:  # the user's code: its errors and its exit, said on one line
            raise PbmtError(f"{FLAG} {name} failed to load: {error_place(err, path, Path(name))}"
                            f"{type(err).__name__}: {' '.join(str(err).split())}") from None
        tuners = [value for value in vars(module).values()
                  if isinstance(value, type) and issubclass(value, Tuner) and value.__module__ == module.__name__
                  and "name" in vars(value)]
        for tuner in tuners:
            add_tuner(tuner, f"{FLAG} {name}:{inspect.getsourcelines(tuner)[1]}")
        adds = tuple(t.name for t in tuners) + tuple(sorted(set(KINDS) - kinds))
        if not adds:
            raise UsageError(f"{FLAG} {name} adds no tuner (a class of pbmt.tune.tuner.Tuner with a name) and "
                             "registers no feature (pbmt.features.register)")
        _ADDS[path] = adds
