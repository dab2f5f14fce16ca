"""The ``pbmt`` command line: ``pbmt <verb> --help`` explains each verb.

Exit codes: 0 success, 1 runtime error (bad input file, missing model, a
fault of the environment such as a full disk), 2 usage error (bad arguments),
130 interrupted (Ctrl-C), 141 broken pipe, 143 terminated (SIGTERM: ``kill``, a cluster scheduler's stop).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import io
import os
import re
import signal
import sys
import traceback
from types import ModuleType
from typing import Iterator

from pbmt import __version__
from pbmt.commands.options import number_text, range_of, visible_flags
from pbmt.base.errors import PbmtError, UsageError
from pbmt.base.feature_modules import module_frame
from pbmt.base.files import MAX_INDEX, parse_finite, parse_int, release_folders

# verb -> its one-line summary; its module (``verb_module``) has add_arguments(parser) and run(args) -> int
VERBS = {
    "translate": "Translate text with a phrase-based model.",
    "explain": "Show how one sentence is translated: options, future costs, derivation, search.",
    "sample": "Translate text by Gibbs sampling over derivations (annealing, greedy or sample decisions).",
    "eval": "Score a translation against references with BLEU.",
    "analyze": "Tell search errors from model errors over a dev set, by forced decoding of the references.",
    "tokenize": "Turn plain text into a model's tokens (Moses's tokeniser, truecaser or lowercasing).",
    "detokenize": "Turn a model's tokens back into plain text (capitalise, Moses's detokeniser).",
    "lm": "Estimate a Kneser-Ney n-gram LM from tokenised text and write ARPA.",
    "tune": "Tune feature weights on a dev set (decode, pool n-best lists, optimise).",
    "optimize": "Optimise feature weights on an n-best list, without decoding.",
    "train": "Train a phrase-based model (align, extract, score, LM) from a parallel text.",
    "filter": "Filter a model's tables to the phrases an input text can use.",
    "rescore": "Rescore n-best lists with extra features and learned weights (ListNet, MERT, PRO, APRO).",
    "plot": "Draw tuning curves, weight trajectories and sampler traces as PNG figures.",
    "serve": "Serve a model over HTTP: a JSON API (translate, explain) and an interactive teaching page.",
}


#: Another verb's (or tool's) spelling of a concept -> this verb's, for "did you mean": tune's --src is the
#: -i/--input of translate and analyze, sacrebleu's -r/--reference pbmt's --refs.
_OTHER_SPELLINGS = {"src": "input", "source": "input", "ref": "refs", "reference": "refs", "references": "refs",
                    "nbest": "n-best"}
PLUGIN_VERBS = ("tune", "optimize", "rescore")  # the verbs of pbmt.commands.plugins's --plugins


def verb_module(verb: str) -> ModuleType:
    """The module of ``verb``, imported now: a run imports its own verb's only, as the others' imports (the
    trainer's, the server's, scipy's optimisers) would cost every start-up a few tenths of a second."""
    match verb:
        case "translate":
            from pbmt.commands import translate as module
        case "explain":
            from pbmt.commands import explain as module
        case "sample":
            from pbmt.commands import sample as module
        case "eval":
            from pbmt.commands import eval as module
        case "analyze":
            from pbmt.commands import analyze as module
        case "tokenize":
            from pbmt.commands import tokenize as module
        case "detokenize":
            from pbmt.commands import detokenize as module
        case "lm":
            from pbmt.commands import lm as module
        case "tune":
            from pbmt.commands import tune as module
        case "optimize":
            from pbmt.commands import optimize as module
        case "train":
            from pbmt.commands import train as module
        case "filter":
            from pbmt.commands import filter as module
        case "rescore":
            from pbmt.commands import rescore as module
        case "plot":
            from pbmt.commands import plot as module
        case "serve":
            from pbmt.commands import serve as module
        case _:
            raise ValueError(f"no verb {verb!r}")
    return module


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows defaults and keeps the descriptions' paragraphs and examples as written.

    A one-line description (an argument group's) is wrapped; a longer one
    (a verb's docstring) is kept as written. A default of None (the option is unset, or its help says in words where
    the value comes from), False or a flag's own value (``--no-causes``, True: read as "on") is not shown.
    """

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return super()._fill_text(text, width, indent)
        return argparse.HelpFormatter._fill_text(self, text, width, indent)

    def _get_help_string(self, action):
        if action.default is None or action.default is False or action.default == []:
            return action.help  # an unset option, an off flag or a repeatable option given no times
        if action.nargs == 0 and not isinstance(action, argparse.BooleanOptionalAction):
            return action.help  # a flag such as --no-causes: its default, True, reads as the flag being on
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """argparse's parser with one-line usage errors (exit code 2), as every other error of pbmt, that suggest
    the nearest spelling of a misspelt option, verb or choice and point to this parser's own help; every
    numeric option's value is checked against its declared range (``pbmt.commands.options.RANGES``). Options
    are taken by their whole spelling only: an abbreviation can silently mean another option (``--tokenize``
    read as ``--tokenized``, the opposite), so it gets the suggestion a misspelling gets."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            allowed = getattr(action, "range", None)
            value = getattr(namespace, action.dest, None)
            if allowed is None or value is None or value is argparse.SUPPRESS:
                continue
            for number in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(number, (int, float)) and number not in allowed:
                    self.error(f"{'/'.join(visible_flags(action))} must be {allowed}, not {number_text(number)}")
                if isinstance(number, int) and abs(number) > MAX_INDEX:  # pbmt's counts and kernels' ints: 32 bits
                    self.error(f"{'/'.join(visible_flags(action))} must be {allowed} and at most {MAX_INDEX:,}, "
                               f"not {number:,}")
        return namespace, extras

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}{self._suggestion(message)} (see {self.prog} --help)\n")

    def _suggestion(self, message: str) -> str:
        """'; did you mean X?' for an unrecognised option or an invalid choice close to a known one, else ''.
        Options are compared without their dashes, which would otherwise make any two long options look alike."""
        if message.startswith("unrecognized arguments: "):
            names = {flag.lstrip("-"): flag for action in self._actions for flag in visible_flags(action)}
            guesses = [(word, [names[_OTHER_SPELLINGS[name]]] if _OTHER_SPELLINGS.get(name) in names else
                        [names[close] for close in difflib.get_close_matches(name, names, n=1, cutoff=0.6)])
                       for word in message.split(": ", 1)[1].split() if word.startswith("-")
                       for name in [word.split("=")[0].lstrip("-")]]
            found = [f"{match[0]} for {word}" if len(guesses) > 1 else match[0] for word, match in guesses if match]
            return f"; did you mean {', '.join(found)}?" if found else ""
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice:
            match = difflib.get_close_matches(choice[1], re.findall(r"'([^']*)'", choice[2]), n=1, cutoff=0.6)
            if match:
                return f"; did you mean {match[0]!r}?"
            if message.startswith("argument --algorithm:") and "--plugins" in self._option_string_actions:
                return "; a tuner of your own: give the file that defines it with --plugins"
        return ""


def unknown_options(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """The long options (``--name`` or ``--name=value``) of ``argv`` that ``parser`` does not know, up to a
    bare ``--``: found before argparse parses, so that a misspelt option is named even when a required option
    is missing too."""
    known = list(parser._option_string_actions)
    unknown = []
    for word in argv:
        if word == "--":
            break
        name = word.split("=", 1)[0]
        if word.startswith("--") and len(name) > 2 and name not in known:
            unknown.append(word)
    return unknown


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """``pbmt``'s parser with every verb's options; with ``only`` (a verb's name), that verb's alone, the
    others listed by their summaries (their modules are not imported: ``parse`` builds what a run needs)."""
    parser = Parser(
        prog="pbmt",
        description="Phrase-based statistical machine translation.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pbmt {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    parser.verb_parsers = {}
    for verb, summary in VERBS.items():
        if only is not None and verb != only:
            verbs.add_parser(verb, help=summary)
            continue
        module = verb_module(verb)
        sub = verbs.add_parser(
            verb,
            help=summary,
            description=module.__doc__,
            formatter_class=HelpFormatter,
        )
        module.add_arguments(sub)
        _checked_numbers(sub, verb)
        sub.set_defaults(run=module.run)
        parser.verb_parsers[verb] = sub
    return parser


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """``pbmt``'s arguments; a usage error names the verb's own help, and an unknown option is named (with the
    nearest known spelling) before any other mistake."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    verb = _verb(argv)
    if verb in PLUGIN_VERBS:  # what --plugins files add is part of the verb's parser
        from pbmt.commands.plugins import load_plugins, plugin_files
        load_plugins(plugin_files(argv))
    parser = build_parser(only=verb)
    command = _command(parser, argv)
    unknown = unknown_options(command, argv) if command is not parser else []
    if unknown and not {"-h", "--help"} & set(argv):
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    args, extra = parser.parse_known_args(argv)
    if extra:
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _verb(argv: list[str]) -> str:
    """The verb of ``argv``: its first word that is not an option (pbmt itself takes no option with a value)."""
    return next((word for word in argv if not word.startswith("-")), "")


def _command(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the (sub-)command ``argv`` names: ``pbmt plot tuning ...`` -> that of ``plot tuning``."""
    for action in parser._actions:
        if isinstance(action.choices, dict):
            word = next((w for w in argv if w in action.choices), None)
            if word is not None:
                return _command(action.choices[word], argv[argv.index(word) + 1:])
    return parser


def finite_float(text: str) -> float:
    """argparse's float for every option: a finite number in ASCII (no nan, inf, 1e999, '٣')."""
    return parse_finite(text)


def ascii_int(text: str) -> int:
    """argparse's int for every option: ASCII digits only (Python's int also takes '٣' and '1_0')."""
    return parse_int(text)


finite_float.__name__, ascii_int.__name__ = "finite float", "int"  # argparse names the type in its message


def _checked_numbers(parser: argparse.ArgumentParser, verb: str) -> None:
    """Every float or int option of ``parser`` (and its sub-commands) parsed by ``finite_float``/``ascii_int``
    and checked against its range (``Parser.parse_known_args``), so no verb can forget either. Their unnamed
    arguments show as N (an int) and X (a float)."""
    for action in parser._actions:
        action.range = range_of(verb, action.dest)
        if action.type in (float, int) and action.metavar is None:
            action.metavar = "N" if action.type is int else "X"  # short: the help line says what it counts
        if action.type is float:
            action.type = finite_float
        elif action.type is int:
            action.type = ascii_int
        for choice in (action.choices or {}).values() if isinstance(action.choices, dict) else ():
            _checked_numbers(choice, verb)


def main(argv: list[str] | None = None) -> int:
    """Run ``pbmt`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    The one error path of every verb: a user's mistake (``PbmtError``, a
    usage error) or a fault of the environment (any ``OSError``: a missing
    permission, a full disk; memory) is one line on standard error and exit
    code 1 (2 for usage errors); Ctrl-C anywhere, numba kernels included, is
    "interrupted" and 130; SIGTERM is "terminated" and 143 (each with what a
    resumable run kept); a closed pipe is 141. Only pbmt's own bugs print a
    traceback, and say so.
    """
    _stand_in_for_closed_streams()
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    verb = _verb(argv)
    prefix = f"pbmt {verb}" if verb in VERBS else "pbmt"  # for an error while parsing too: loading --plugins
    with _sigterm_raising():
        try:
            args = parse(argv)
            code = args.run(args)
            sys.stdout.flush()
            return code
        except BaseException as err:  # noqa: BLE001 - the one place that turns every exception into an exit code
            return _report(prefix, err)
        finally:
            release_folders()


class _ClosedStream(io.TextIOBase):
    """What ``sys.stdin``/``sys.stdout`` become when the shell closed them (``<&-``, ``>&-``): reading or writing
    is a PbmtError saying so; flushing what was never written is nothing."""

    def __init__(self, name: str):
        self.name = name

    def _refuse(self, *_):
        raise PbmtError(f"standard {self.name} is closed")

    read = readline = readlines = write = writelines = fileno = _refuse
    buffer = property(_refuse)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class Terminated(BaseException):
    """SIGTERM arrived: a BaseException, as KeyboardInterrupt is, so that what catches Exception lets it pass and
    what keeps a resumable run's records for Ctrl-C (the journal, tune's and train's checkpoints) keeps them."""


def _raise_terminated(number: int, frame) -> None:
    raise Terminated


@contextlib.contextmanager
def _sigterm_raising() -> Iterator[None]:
    """SIGTERM (a cluster scheduler's stop, ``kill``) raises ``Terminated`` in the main thread, as Ctrl-C raises
    KeyboardInterrupt: the run stops as it does for Ctrl-C, says what it kept, and exits 143 (128 + SIGTERM, what a
    shell reports for a process the signal killed). Left alone where a caller chose to ignore SIGTERM, and off the
    main thread (Python allows handlers only there); the previous handler is back afterwards (``main`` called in
    a process that goes on: tests, a notebook)."""
    try:
        previous = signal.getsignal(signal.SIGTERM)
        if previous == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:
        previous = None
    try:
        yield
    finally:
        if previous == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, previous)


def _stand_in_for_closed_streams() -> None:
    """Standard streams the shell closed: their descriptors hold ``/dev/null`` (so no file pbmt opens later, nor
    a worker process, takes descriptor 0, 1 or 2 and gets stray output), and using one of them is one line of
    error (a closed standard error just takes nothing)."""
    for fd, name, attribute in ((0, "input", "stdin"), (1, "output", "stdout"), (2, "error", "stderr")):
        if getattr(sys, attribute) is not None:
            continue
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        setattr(sys, attribute, open(os.devnull, "w") if fd == 2 else _ClosedStream(name))


def _report(prefix: str, err: BaseException) -> int:
    """Print ``err`` as its kind deserves (``main``'s docstring) and return the exit code."""
    if isinstance(err, SystemExit):
        raise err
    if _caused_by(err, Terminated):
        print(f"{prefix}: terminated" + "".join(f" ({note})" for note in _notes(err)), file=sys.stderr)
        return 128 + signal.SIGTERM
    if _interrupted(err):
        print(f"{prefix}: interrupted" + "".join(f" ({note})" for note in _notes(err)), file=sys.stderr)
        return 130
    if isinstance(err, BrokenPipeError) or _caused_by(err, BrokenPipeError):
        # the reader of our output stopped (`pbmt translate | head`): end quietly, as Unix tools do
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    if isinstance(err, (PbmtError, OSError, MemoryError)):
        message = (str(err) if isinstance(err, PbmtError) else
                   _describe_os_error(err) if isinstance(err, OSError) else "out of memory")
        print(f"{prefix}: error: {message}" + "".join(f" ({note})" for note in _notes(err)), file=sys.stderr)
        return 2 if isinstance(err, UsageError) else 1
    traceback.print_exception(err)
    found = module_frame(err)
    if found is not None:  # the traceback above is for the module's author
        frame, what = found
        print(f"{prefix}: error in {what}: {frame.filename}:{frame.lineno}: {type(err).__name__}: "
              f"{' '.join(str(err).split())}", file=sys.stderr)
        return 1
    print(f"{prefix}: internal error: this is a bug in pbmt (version {__version__}), not in your input; "
          "please report it with the traceback above", file=sys.stderr)
    return 1


def _chain(err: BaseException):
    """``err`` and the exceptions it was raised from or during, outermost first."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def _notes(err: BaseException) -> list[str]:
    """What the code an exception went through added to it (``add_note``: e.g. that a resumable output's records
    were kept), from ``err`` and what it was raised from, outermost first."""
    return [note for e in _chain(err) for note in getattr(e, "__notes__", ())]


def _caused_by(err: BaseException, kind: type) -> bool:
    return any(isinstance(e, kind) for e in _chain(err))


def _interrupted(err: BaseException) -> bool:
    """Ctrl-C: a KeyboardInterrupt, or what numba makes of one raised inside a kernel (a chain of
    ``SystemError``s whose innermost is the KeyboardInterrupt)."""
    if isinstance(err, KeyboardInterrupt):
        return True
    return isinstance(err, SystemError) and _caused_by(err, KeyboardInterrupt)


def _describe_os_error(err: OSError) -> str:
    reason = err.strerror or str(err)
    if err.errno == errno.ENOSPC:
        reason = "no space left on the device"
    names = [str(n) for n in (err.filename, err.filename2) if n is not None]
    return ": ".join([*names, reason]) if names else reason
