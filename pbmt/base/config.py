"""Reading and writing Moses's ``moses.ini`` (version 2 format).

A ``moses.ini`` lists feature functions (``[feature]``), their weights
(``[weight]``) and decoder settings (``[distortion-limit]``, ``[stack]``,
``[ttable-limit]``, ...). Paths in feature lines may be relative: they are
resolved from the ini file's folder (Moses resolves them from the working
directory; resolving from the file is what makes a model folder portable).

A sparse feature function (a type whose ``FeatureType.n_scores`` is 0, as
Moses declares its sparse features) has no dense columns and no ``[weight]``
line: its features' weights are ``name value`` lines of the file that the
``[weight-file]`` section names (``MosesConfig.weight_file``), Moses's place for
sparse weights.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, TypeVar

from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.feature_modules import load_feature_modules
from pbmt.base.files import Outputs, atomic_write, parse_float, parse_int, read_lines
from pbmt.base.nbest import parse_features

T = TypeVar("T")


@dataclass(frozen=True)
class FeatureType:
    """What pbmt knows of one Moses feature type."""

    default_name: str  # Moses names the k-th feature of a type default_name + str(k); a sparse one default_name
    n_scores: int | None  # None: given by the line's num-features=; 0: a sparse feature function
    needs_path: bool = False
    finds_gz: bool = False  # a path= naming no file names path.gz when that is one (Moses's LexicalReordering)

    @property
    def sparse(self) -> bool:
        """Whether the type's features are sparse (named features weighted by ``[weight-file]``, no columns)."""
        return self.n_scores == 0


FEATURE_TYPES: dict[str, FeatureType] = {
    "UnknownWordPenalty": FeatureType("UnknownWordPenalty", 1),
    "WordPenalty": FeatureType("WordPenalty", 1),
    "PhrasePenalty": FeatureType("PhrasePenalty", 1),
    "Distortion": FeatureType("Distortion", 1),
    "PhraseDictionaryMemory": FeatureType("TranslationModel", None, needs_path=True),
    "LexicalReordering": FeatureType("LexicalReordering", None, needs_path=True, finds_gz=True),
    "KENLM": FeatureType("LM", 1, needs_path=True),
    "OpSequenceModel": FeatureType("OpSequenceModel", 5, needs_path=True),
    # pbmt's sparse families (pbmt.model.sparse), named here so that every process parses their lines
    "ClassBoundaryFeature": FeatureType("pb", 0, needs_path=True),
    "BlockFeature": FeatureType("Block", 0),
    "DistortionBinFeature": FeatureType("db", 0),
}

_V1_SECTIONS = {"ttable-file", "lmodel-file", "weight-t", "weight-l", "weight-d", "weight-w"}
WEIGHT_FILE = "weight-file"  # the section naming the sparse weights file, as Moses's mert-moses.pl writes it


@dataclass(frozen=True)
class Feature:
    """One line of ``[feature]``: ``KENLM name=LM0 path=lm.arpa order=3``.

    ``args`` holds every key=value of the line but ``name``; ``line``: its line number in the file it was read
    from (None: not read from a file).
    """

    type: str
    name: str
    n_scores: int
    args: dict[str, str] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False)

    def to_line(self) -> str:
        return " ".join([self.type, f"name={self.name}", *(f"{k}={v}" for k, v in self.args.items())])


def relative_path(path: str, folder: str) -> str:
    """``path`` relative to ``folder`` (absolute) when it is an absolute path in or below it, else as it is."""
    if not os.path.isabs(path):
        return path
    absolute = os.path.normpath(path)
    if os.path.commonpath([absolute, folder]) != folder:
        return path
    return Path(os.path.relpath(absolute, folder)).as_posix()


@dataclass(frozen=True)
class MosesConfig:
    """A parsed ``moses.ini``.

    ``weights`` maps a feature name to its weights (one per score; sparse features have none);
    ``settings`` maps every other section to its lines, as strings;
    ``feature_modules`` the resolved paths of the model's own feature modules
    (``pbmt.base.feature_modules``), run before the ``[feature]`` lines are read.
    """

    features: tuple[Feature, ...]
    weights: dict[str, tuple[float, ...]]
    settings: dict[str, tuple[str, ...]]
    path: Path | None = None
    setting_lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)  # section -> header line
    feature_modules: tuple[Path, ...] = ()

    @classmethod
    def read(cls, path: str | Path) -> "MosesConfig":
        """Parse ``path`` (after running the feature modules of the ``pbmt.toml`` beside it); raises FormatError
        naming the line for anything malformed."""
        path = config_path(path)
        modules = load_feature_modules(path.parent)
        sections, headers = _sections(path)
        features = _parse_features(path, sections.pop("feature", []), modules)
        weights = _parse_weights(path, sections.pop("weight", []), features)
        settings = {name: tuple(text for _, text in lines) for name, lines in sections.items()}
        return cls(features, weights, settings, path, {name: headers[name] for name in settings}, modules)

    def write(self, path: str | Path, outputs: Outputs | None = None) -> None:
        """Write as a version 2 ``moses.ini`` (atomically; into ``outputs``, one run's files renamed together, when
        given). Paths are written as given, but that an absolute path in or below the folder written to is written
        relative to it, so that the folder can move."""
        folder = os.path.abspath(Path(path).parent)
        features = [replace(f, args={**f.args, "path": relative_path(f.args["path"], folder)}) if "path" in f.args
                    else f for f in self.features]
        out = []
        for name, values in self.settings.items():
            out += [f"[{name}]", *values, ""]
        out += ["[feature]", *(f.to_line() for f in features), ""]
        out += ["[weight]"]
        out += [f"{name}= " + " ".join(format(w, ".9g") for w in ws) for name, ws in self.weights.items()]
        if outputs is not None:
            outputs.open(path).write("\n".join(out) + "\n")
            return
        with atomic_write(path) as handle:
            handle.write("\n".join(out) + "\n")

    @property
    def sparse_features(self) -> tuple[Feature, ...]:
        """The ``[feature]`` lines of sparse feature functions (no columns, weights in ``weight_file``)."""
        return tuple(f for f in self.features if f.n_scores == 0)

    @property
    def weight_file(self) -> Path | None:
        """The sparse weights file ``[weight-file]`` names, resolved from the ini's folder, or None."""
        name = self.setting(WEIGHT_FILE, None)
        return None if name is None else self.resolve(name)

    def with_weight_file(self, path: str | os.PathLike | None) -> "MosesConfig":
        """A copy whose ``[weight-file]`` names ``path`` (None: no section)."""
        settings = {k: v for k, v in self.settings.items() if k != WEIGHT_FILE}
        if path is not None:
            settings[WEIGHT_FILE] = (str(path),)
        return replace(self, settings=settings)

    def without_sparse(self) -> "MosesConfig":
        """A copy without the sparse feature lines and ``[weight-file]``: the dense model, for a model whose
        sparse families are given otherwise."""
        dense = replace(self, features=tuple(f for f in self.features if f.n_scores))
        return dense.with_weight_file(None)

    def feature(self, name: str) -> Feature:
        """The feature named ``name`` (KeyError if absent)."""
        for f in self.features:
            if f.name == name:
                return f
        raise KeyError(name)

    def resolve(self, relative: str) -> Path:
        """A path from a feature line, resolved from the ini file's folder."""
        return _resolved(self.path, relative)

    def setting(self, name: str, default: T, convert: Callable[[str], T] = str) -> T:
        """The value of section ``[name]`` converted (``int``: ASCII digits; ``float``: finite), or ``default`` if
        absent; more than one value is an error."""
        values = self.settings.get(name)
        if not values:
            return default
        where = self.setting_lines.get(name)
        if len(values) > 1:
            raise FormatError(self.path or "moses.ini", where, f"[{name}] has {len(values)} values, expected one")
        try:
            value = parse_int(values[0]) if convert is int else convert(values[0])
            if convert is float and not math.isfinite(value):
                raise ValueError(values[0])
            return value
        except ValueError:
            raise FormatError(self.path or "moses.ini", where + 1 if where else None,
                              f"[{name}] has value {values[0]!r}, which is not a valid "
                              f"{'finite number' if convert is float else convert.__name__}") from None

    def with_weights(self, weights: dict[str, tuple[float, ...]]) -> "MosesConfig":
        """A copy with some features' weights replaced (each must keep its length)."""
        merged = dict(self.weights)
        for name, ws in weights.items():
            if name not in merged:
                raise PbmtError(f"no feature named {name!r}; the features are {', '.join(merged)}")
            if len(ws) != len(merged[name]):
                raise PbmtError(f"{name} has {len(merged[name])} weights, got {len(ws)}")
            merged[name] = tuple(float(w) for w in ws)
            if not all(allowed_weight(w) for w in merged[name]):
                raise PbmtError(f"{name}: weights must be finite numbers {WEIGHT_RANGE}, got "
                                f"{' '.join(repr(float(w)) for w in ws)}")
        return replace(self, weights=merged)


def _default_model() -> Path:
    """The embedded model's moses.ini: ``data/model`` of the source tree pbmt runs from, else the copy a wheel
    installs (pyproject's data-files) into ``PREFIX/share/pbmt/model`` beside ``PREFIX/lib/pythonX.Y/site-packages``,
    the prefix being a virtual environment's, ``pip install --prefix``'s or ``--user``'s."""
    here = Path(__file__).resolve()  # pbmt/base/config.py
    in_tree = here.parents[2] / "data" / "model" / "moses.ini"
    installed = here.parents[5] / "share" / "pbmt" / "model" / "moses.ini" if len(here.parents) > 5 else in_tree
    return installed if not in_tree.is_file() and installed.is_file() else in_tree


DEFAULT_MODEL = _default_model()

MAX_WEIGHT = 1e6
WEIGHT_RANGE = f"from {-MAX_WEIGHT:,.0f} to {MAX_WEIGHT:,.0f}"


def config_path(path: str | os.PathLike) -> Path:
    """``path`` if it is a file: else PbmtError, naming a folder's moses.ini when given the model's folder."""
    path = Path(path)
    if path.is_dir():
        inside = path / "moses.ini"
        raise PbmtError(f"{path}: is a directory; a model is given by its moses.ini"
                        + (f": {inside}" if inside.is_file() else ""))
    if not path.exists():
        raise PbmtError(f"{path}: no such model configuration")
    return path


def allowed_weight(weight: float) -> bool:
    """Whether ``weight`` may weigh a feature: finite and at most ``MAX_WEIGHT`` in magnitude, so that a
    sentence's score (features of up to about 1e6 in magnitude: log-probabilities, counts) stays finite where
    1e308 and -1e308 overflowed to nan totals."""
    return math.isfinite(weight) and abs(weight) <= MAX_WEIGHT


def _sections(path: Path) -> tuple[dict[str, list[tuple[int, str]]], dict[str, int]]:
    """The (line number, text) lines of each ``[section]`` of an ini file, comments and blank lines dropped, and
    each section's header line."""
    sections: dict[str, list[tuple[int, str]]] = {}
    headers: dict[str, int] = {}  # section -> line of its header
    current = None
    for number, raw in read_lines(path):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise FormatError(path, number, f"section header {line!r} lacks its closing ']'")
            current = line[1:-1].strip()
            if current in _V1_SECTIONS:
                raise FormatError(
                    path, number,
                    f"[{current}] belongs to the old (version 1) moses.ini format; "
                    "pbmt reads version 2 ([feature] and [weight] sections)",
                )
            if current in headers:
                raise FormatError(path, number, f"a second [{current}] section (the first is on line "
                                  f"{headers[current]}): pbmt will not guess which one is meant")
            headers[current] = number
            sections[current] = []
            continue
        if current is None:
            raise FormatError(path, number, f"{line!r} stands before any [section]")
        sections[current].append((number, line))
    return sections, headers


def read_weights(path: str | Path) -> dict[str, tuple[float, ...]]:
    """The weights of a moses.ini, or of a file holding only its ``[weight]`` section (``Name= w1 w2 ...`` lines,
    as Moses's tuning scripts print them): the model they are for checks the names and lengths."""
    path = Path(path)
    sections, _ = _sections(path)
    if "feature" in sections:
        return MosesConfig.read(path).weights
    if not sections.get("weight"):
        raise FormatError(path, None, "has neither a [feature] section (a moses.ini) nor weight lines under [weight]")
    weights: dict[str, tuple[float, ...]] = {}
    lines_of: dict[str, int] = {}
    for number, line in sections["weight"]:
        for name, values in parse_features(line, path, number).items():
            if name in weights:
                raise FormatError(path, number, f"a second weight line for {name} (the first is on line "
                                  f"{lines_of[name]})")
            weights[name], lines_of[name] = values, number
    return weights


#: Moses's phrase tables in binary forms, each built from a text table (processPhraseTableMin, CreateOnDiskPt,
#: CreateProbingPT, processPhraseTable), which is what pbmt reads.
_BINARY_PHRASE_TABLES = ("PhraseDictionaryCompact", "PhraseDictionaryOnDisk", "ProbingPT", "PhraseDictionaryBinary")


def _parse_features(path: Path, lines: list[tuple[int, str]], modules: tuple[Path, ...] = ()) -> tuple[Feature, ...]:
    """The ``[feature]`` lines; a type no feature is registered as is an error naming the line, and where a
    feature of one's own is registered (``modules``: those the ``pbmt.toml`` named, which registered none of it)."""
    counters: dict[str, int] = {}
    features = []
    names = set()
    for number, line in lines:
        type_, *tokens = line.split()
        spec = FEATURE_TYPES.get(type_)
        if spec is None and type_ in _BINARY_PHRASE_TABLES:
            raise FormatError(path, number, f"unsupported feature {type_!r}: pbmt reads phrase tables as text "
                              "(PhraseDictionaryMemory path= the table, plain or .gz, this one was built from)")
        if spec is None:
            where = (f"the pbmt.toml's [features] modules ({', '.join(m.name for m in modules)}) register none of "
                     f"that name: a FeatureFunction class of theirs with moses_name = {type_!r} and @register"
                     if modules else "a feature of your own is named by its module under [features] modules in "
                     "the pbmt.toml beside this file")
            raise FormatError(path, number, f"unsupported feature {type_!r}; pbmt supports: "
                              f"{', '.join(FEATURE_TYPES)} ({where})")
        args = {}
        for token in tokens:
            key, eq, value = token.partition("=")
            if not eq or not key:
                raise FormatError(path, number, f"expected key=value, found {token!r}")
            if key in args:
                raise FormatError(path, number, f"{key}= is given twice")
            args[key] = value
        index = counters.get(spec.default_name, 0)
        counters[spec.default_name] = index + 1
        name = args.pop("name", spec.default_name if spec.sparse else f"{spec.default_name}{index}")
        if name in names:
            raise FormatError(path, number, f"a second feature is named {name!r}")
        names.add(name)
        n_scores = spec.n_scores
        if spec.sparse and "num-features" in args:
            raise FormatError(path, number, f"{type_} is a sparse feature function: it has no num-features (its "
                              f"features' weights are in the file [{WEIGHT_FILE}] names)")
        if "num-features" in args:
            try:
                n_scores = parse_int(args["num-features"])
                if n_scores < 1:
                    raise ValueError(n_scores)
            except ValueError:
                raise FormatError(path, number, f"num-features={args['num-features']!r} is not a positive "
                                  "integer") from None
        if n_scores is None:
            raise FormatError(path, number, f"{type_} needs num-features=N")
        if spec.needs_path and "path" not in args:
            raise FormatError(path, number, f"{type_} needs path=FILE")
        if spec.finds_gz and "path" in args:
            args["path"] = _gz_if_meant(path, args["path"])
        features.append(Feature(type_, name, n_scores, args, number))
    return tuple(features)


def _resolved(ini: Path | None, relative: str) -> Path:
    """``relative`` (a path from a line of the ini ``ini``) resolved from ``ini``'s folder (None: as it is)."""
    p = Path(relative).expanduser()
    return p if p.is_absolute() or ini is None else ini.parent / p


def _gz_if_meant(ini: Path, given: str) -> str:
    """``given`` + ``.gz`` when ``given`` (a path= of the ini ``ini``) names no file and that name with ``.gz``
    does, else ``given``: Moses's lexicalized reordering table opens ``path.gz`` so, and moses.ini files of
    Moses models rely on it."""
    resolved = _resolved(ini, given)
    return f"{given}.gz" if not resolved.exists() and Path(f"{resolved}.gz").is_file() else given


def _parse_weights(path: Path, lines: list[tuple[int, str]], features: tuple[Feature, ...]) -> dict[str, tuple[float, ...]]:
    expected = {f.name: f.n_scores for f in features if f.n_scores}
    sparse = {f.name for f in features if not f.n_scores}
    weights: dict[str, tuple[float, ...]] = {}
    lines_of: dict[str, int] = {}
    for number, line in lines:
        name, eq, values = line.partition("=")
        name = name.strip()
        if not eq:
            raise FormatError(path, number, f"expected 'Name= w1 w2 ...', found {line!r}")
        if name in sparse:
            raise FormatError(path, number, f"{name} is a sparse feature function: its features' weights go in the "
                              f"file [{WEIGHT_FILE}] names, not in [weight]")
        if name not in expected:
            raise FormatError(path, number, f"weights for {name!r}, which is not a feature in [feature]")
        if name in weights:
            raise FormatError(path, number, f"a second weight line for {name} (the first is on line {lines_of[name]})")
        lines_of[name] = number
        try:
            ws = tuple(parse_float(v) for v in values.split())
        except ValueError:
            raise FormatError(path, number, f"weights of {name} are not all numbers: {values.strip()!r}") from None
        if not all(allowed_weight(w) for w in ws):
            raise FormatError(path, number, f"weights of {name} must be finite numbers {WEIGHT_RANGE}: "
                                            f"{values.strip()!r}")
        if len(ws) != expected[name]:
            raise FormatError(path, number, f"{name} has {expected[name]} scores but {len(ws)} weights")
        weights[name] = ws
    missing = [n for n in expected if n not in weights]
    if missing:  # named at the first such feature's line, as Moses has no default weights either
        line = next(f.line for f in features if f.name == missing[0])
        raise FormatError(path, line, f"[weight] has no weights for {', '.join(missing)}: give each feature a "
                          "line 'Name= w1 w2 ...' there")
    return {f.name: weights[f.name] for f in features if f.name in expected}
