"""The one registry of global features: by name for the sampler, SampleRank, n-best rescoring and scoring.

A *kind* is registered with ``@register(kind, prefix)`` on either

- a ``GlobalFeature`` subclass whose constructor takes ``(argument, vocab)``
  (the argument string after ``KIND:`` or None, and the vocabulary the word
  ids belong to), or
- a function of one ``Hypothesis`` returning ``size`` numbers: a
  sentence-level feature (``SentenceFeature``) without an argument.

A request names a kind and its argument (``lm:lm5.arpa.gz``); ``name_features``
turns requests into ``FeatureSpec``s with column names ``prefix + k`` (the
first k free among the columns already there, as moses.ini names features)
and ``build`` makes the features. Kinds marked ``nbest_only`` (such as
``consensus``, which compares the entries of an n-best list) only rescore.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.feature_modules import user_module
from pbmt.features.base import GlobalFeature, Hypothesis, SentenceFeature
from pbmt.base.files import atomic_write, read_lines
from pbmt.base.nbest import parse_features
from pbmt.base.vocab import Vocab


@dataclass(frozen=True)
class FeatureKind:
    """A registered kind: its name, column-name prefix, how to make one, what it needs.

    make(argument, vocab) -> GlobalFeature; takes_argument: None (optional),
    True (required) or False (none allowed); needs_sources: rescoring must
    be given the source sentences; nbest_only: only n-best rescoring can use
    it (it reads a whole list).
    """

    kind: str
    prefix: str
    make: Callable[[str | None, Vocab], GlobalFeature]
    takes_argument: bool | None
    needs_sources: bool
    nbest_only: bool
    summary: str
    module: str = ""  # the module of what was registered: a file of one's own (--plugins) or pbmt's


# kind -> FeatureKind; filled by @register (the built-in kinds: pbmt.features imports their modules)
KINDS: dict[str, FeatureKind] = {}


def register(kind: str, prefix: str, size: int = 1, takes_argument: bool | None = False,
             needs_sources: bool = False, nbest_only: bool = False):
    """Decorator registering a ``GlobalFeature`` subclass or a function ``f(Hypothesis) -> float64[size]`` as ``kind``.

    The first line of its docstring is the one-line summary ``--help`` shows.
    """
    def decorator(obj):
        if isinstance(obj, type) and issubclass(obj, GlobalFeature):
            make = obj
        else:
            make = _sentence_function(obj, size)
        summary = (obj.__doc__ or "").strip().split("\n")[0]
        KINDS[kind] = FeatureKind(kind, prefix, make, takes_argument, needs_sources, nbest_only, summary,
                                  obj.__module__)
        return obj
    return decorator


def _sentence_function(function, size):
    class FunctionFeature(SentenceFeature):
        __doc__ = function.__doc__

        def __init__(self, argument, vocab):
            self.size = size

        def sentence_values(self, hypothesis: Hypothesis) -> np.ndarray:
            return function(hypothesis)

    FunctionFeature.__name__ = FunctionFeature.__qualname__ = function.__name__
    return FunctionFeature


@dataclass(frozen=True)
class FeatureSpec:
    """One requested feature: its kind, its column name and its argument (or None)."""

    kind: str
    name: str
    argument: str | None = None


def parse_requests(text: str) -> list[tuple[str, str | None]]:
    """``"KIND[:ARG],KIND[:ARG]"`` as (kind, argument) pairs (an argument may not contain a comma)."""
    requests = []
    for item in text.split(","):
        kind, _, argument = item.strip().partition(":")
        if kind:
            requests.append((kind, argument or None))
    return requests


def name_features(requests: Sequence[tuple[str, str | None]], taken: Sequence[str] = (),
                  nbest: bool = True) -> list[FeatureSpec]:
    """Specs for ``requests`` ((kind, argument) pairs), each named ``prefix + k`` with the smallest k not in
    ``taken`` nor given to an earlier request.

    Raises PbmtError for an unknown kind, a missing or unexpected argument,
    or (``nbest`` False: not for rescoring) a kind only n-best rescoring can use.
    """
    used = set(taken)
    specs = []
    for kind, argument in requests:
        if kind not in KINDS:
            raise PbmtError(f"unknown global feature {kind!r}; known: {', '.join(sorted(KINDS))}")
        spec = KINDS[kind]
        if spec.takes_argument is True and argument is None:
            raise PbmtError(f"global feature {kind} needs an argument ({kind}:ARG)")
        if spec.takes_argument is False and argument is not None:
            raise PbmtError(f"global feature {kind} takes no argument")
        if spec.nbest_only and not nbest:
            raise PbmtError(f"global feature {kind} compares the entries of an n-best list: only "
                            "'pbmt rescore' can use it")
        k = 0
        while f"{spec.prefix}{k}" in used:
            k += 1
        used.add(f"{spec.prefix}{k}")
        specs.append(FeatureSpec(kind, f"{spec.prefix}{k}", argument))
    return specs


def user_files(specs: Sequence[FeatureSpec]) -> tuple[tuple[Path, str], ...]:
    """The files of one's own (``pbmt.base.feature_modules.run_module``: ``--plugins``) that registered the kinds
    of ``specs``, each with what it is: a worker process runs them before it builds the features."""
    modules = dict.fromkeys(KINDS[s.kind].module for s in specs if s.kind in KINDS)
    return tuple(found for found in map(user_module, modules) if found is not None)


def build(specs: Sequence[FeatureSpec], vocab: Vocab) -> list[GlobalFeature]:
    """The features of ``specs``, their word ids in ``vocab``, each named as its spec says."""
    features = []
    for spec in specs:
        if spec.kind not in KINDS:
            raise PbmtError(f"unknown global feature {spec.kind!r}; known: {', '.join(sorted(KINDS))}")
        feature = KINDS[spec.kind].make(spec.argument, vocab)
        feature.names = (spec.name,)
        features.append(feature)
    return features


def describe() -> str:
    """One line per registered kind, for ``--help``."""
    return "; ".join(f"{k.kind}{'[:ARG]' if k.takes_argument is None else ':ARG' if k.takes_argument else ''}"
                     f" ({k.summary.rstrip('.')})" for k in sorted(KINDS.values(), key=lambda k: k.kind)
                     if not k.nbest_only)


def read_weights(path: str | Path, features: Sequence[GlobalFeature]) -> np.ndarray:
    """The weights of ``features`` from a weights file: ``float64[sum of sizes]``, 0 for a feature it lacks.

    The file has lines ``Name= v [v ...]`` (as in a moses.ini ``[weight]``
    section); ``#`` starts a comment, ``[section]`` headers and names of other
    features (dense weights, say) are skipped. Raises FormatError (file,
    line, what) for a malformed line or a wrong number of values.
    """
    sizes = {f.names[0]: f.size for f in features}
    found: dict[str, tuple[float, ...]] = {}
    for number, raw in read_lines(path):
        line = raw.split("#", 1)[0].strip()
        if not line or (line.startswith("[") and line.endswith("]")):
            continue
        for name, values in parse_features(line, path, number).items():
            if name in sizes:
                if len(values) != sizes[name]:
                    raise FormatError(path, number, f"{name} has {sizes[name]} value(s), the file gives {len(values)}")
                found[name] = values
    return np.array([v for f in features for v in found.get(f.names[0], (0.0,) * f.size)], np.float64)


def write_weights(path: str | Path, features: Sequence[GlobalFeature], weights: np.ndarray) -> None:
    """Write ``weights`` (``float64[sum of sizes]``) of ``features`` as ``read_weights`` reads them, atomically."""
    lines, at = ["# global feature weights (pbmt/features): Name= values"], 0
    for f in features:
        lines.append(f"{f.names[0]}= " + " ".join(repr(float(v)) for v in weights[at:at + f.size]))
        at += f.size
    with atomic_write(path) as handle:
        handle.write("\n".join(lines) + "\n")
