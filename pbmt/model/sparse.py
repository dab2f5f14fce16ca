"""Sparse named features: word classes, the phrase-boundary family, sparse weights on disk.

How to add a family: ``docs/sparse-features.md``. A sparse feature has a name and an id (its
index in the model's sparse weight vector). The phrase-boundary family of
Haddow, Arun & Koehn (2011, §3.4) fires one feature per phrase boundary of a
derivation, named ``pb_<A>_<B>`` for the target-side class ``A`` of the last
word before the boundary and ``B`` of the first word after it; the sentence
start and end are the pseudo-classes ``<s>`` and ``</s>``. Words without a
class (unknown words passed through, words the class file lacks) are in
``<unk>``. Values are counts (how often the bigram occurs at a boundary).

The ``block`` family (``pbmt.model.block_features``) holds Tillmann &
Zhang's binary block features (block, word pairs, length, orientation x
block, target bigrams at block boundaries), trained by ``pbmt tune
--features binary``. Its names are open-ended (they are built from the
phrases), so it is a table of named weights rather than a numbered range;
the searches and the sampler score it (option-local kinds once per
phrase-table candidate, ``TranslationModel.block_scores``; the others as
transition scores).

The ``distortion`` family (``pbmt.model.distortion_bins``) fires one feature
per block, named for the bin of its jump from the previous block (``db_0``,
``db_f1`` ... ``db_b9+``): 13 numbered weights, scored at every transition.

Kernels see the boundary family as plain arrays (a TRANSITION family): every option's
``left_key`` (class of its first target word) and ``right_key`` (class of
its last), the keys ``BOS`` (before the first block) and ``EOS`` (after the
last), and ``pair_weight[right, left]``, a reshaped view of the weights.

A model declares its families as ``moses.ini`` lines of the feature registry
(``pbmt.model.features``), as Moses declares its sparse features: one line
per family, no columns and no ``[weight]`` line; the weights of every family
are the ``name value`` lines of the file ``[weight-file]`` names::

    [feature]
    ...
    ClassBoundaryFeature name=pb path=word-classes.txt   # boundary: word<TAB>class per line
    BlockFeature name=Block kinds=word,block             # block: the kinds n-best lists carry (default all)
    DistortionBinFeature name=db                         # distortion

    [weight-file]
    sparse-weights.txt

Each line's name is the prefix of its features' names in n-best lists
(``pb_<A>_<B>``, ``Block_w:s|t``, ``db_f2``: Moses's ``<name>_<feature>``), so it
is fixed. Moses does not know these three types and refuses such an ini. A
model folder written before may instead name them in ``pbmt.toml`` beside
``moses.ini`` (which then stays dense), and still loads::

    [sparse]
    families = ["boundary"]        # any of "boundary", "block", "distortion"
    classes = "word-classes.txt"   # word<TAB>class per line (the boundary family)
    weights = "sparse-weights.txt"  # name value per line (non-zero weights only, every family)

A model declaring families in both places is an error (``read_sparse``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Iterable

import numpy as np

from pbmt.base.config import FEATURE_TYPES, WEIGHT_FILE, Feature, MosesConfig
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import Outputs, atomic_write, parse_float, read_lines
from pbmt.model import distortion_bins
from pbmt.model.block_features import KINDS as BLOCK_KINDS, PREFIXES as BLOCK_PREFIXES, BlockWeights, is_block_name
from pbmt.model.features import FEATURES, FeatureFunction, register
from pbmt.base.pbmt_toml import FILE as TOML_FILE, check_keys, read_tables, write_tables
from pbmt.base.vocab import Overlay, Vocab

FAMILIES = ("boundary", "block", "distortion")
BOUNDARY_PREFIX = "pb_"
UNKNOWN_CLASS = "<unk>"
SENTENCE_START, SENTENCE_END = "<s>", "</s>"
CLASSES_FILE, WEIGHTS_FILE = "word-classes.txt", "sparse-weights.txt"
# n-best lists spell a block-family name as a feature of a Moses feature function "Block": Moses's tools take
# a name with an underscore for a sparse feature, and a block name of one-word phrases (blk:casa|house) has none
BLOCK_NBEST_PREFIX = "Block_"


@dataclass(frozen=True)
class WordClasses:
    """A word → class map: ``words[i]`` is in class ``names[classes[i]]`` (``classes``: ``int32[len(words)]``)."""

    words: tuple[str, ...]
    classes: np.ndarray
    names: tuple[str, ...]

    def __post_init__(self):
        classes = np.array(self.classes, dtype=np.int32)
        classes.flags.writeable = False
        object.__setattr__(self, "classes", classes)
        if len(classes) != len(self.words) or (len(classes) and not 0 <= classes.min() <= classes.max()
                                                < len(self.names)):
            raise ValueError("every word needs a class among the names")

    @classmethod
    def read(cls, path: str | os.PathLike) -> "WordClasses":
        """A class file: one ``word<TAB>class`` (or ``word class``) per line, UTF-8; blank lines are skipped."""
        words, labels, seen = [], [], {}
        for number, line in read_lines(path):
            if not line.strip():
                continue
            fields = line.split("\t") if "\t" in line else line.split()
            if len(fields) != 2 or not fields[0] or not fields[1].strip():
                raise FormatError(path, number, f"expected 'word<TAB>class', got {line!r}")
            word, label = fields[0], fields[1].strip()
            if word in seen:
                raise FormatError(path, number, f"word {word!r} already has a class (line {seen[word]})")
            if label in (UNKNOWN_CLASS, SENTENCE_START, SENTENCE_END):
                raise FormatError(path, number, f"class name {label!r} is reserved")
            seen[word] = number
            words.append(word)
            labels.append(label)
        if not words:
            raise PbmtError(f"{path}: no word classes")
        names, classes = np.unique(np.array(labels, dtype=object), return_inverse=True)
        return cls(tuple(words), classes, tuple(str(n) for n in names))

    def write(self, path: str | os.PathLike) -> None:
        """Write the class file ``read`` reads (atomically), grouped by class."""
        order = np.argsort(self.classes, kind="stable")
        with atomic_write(path) as handle:
            for i in order:
                handle.write(f"{self.words[i]}\t{self.names[self.classes[i]]}\n")

    def of_ids(self, vocab: Vocab | Overlay, ids: np.ndarray) -> np.ndarray:
        """Class index (``int32``, same shape as ``ids``) of vocabulary ids; ``len(names)`` = ``<unk>``. An
        ``Overlay``'s own words are looked up by spelling (the table covers its base)."""
        base = vocab.base if isinstance(vocab, Overlay) else vocab
        table = self._table(base)
        ids = np.asarray(ids, dtype=np.int64)
        out = np.full(ids.shape, len(self.names), np.int32)
        inside = ids < len(table)
        out[inside] = table[ids[inside]]
        if isinstance(vocab, Overlay) and not inside.all():
            classes = dict(zip(self.words, self.classes.tolist()))
            out[~inside] = [classes.get(vocab.word(int(i)), len(self.names)) for i in ids[~inside]]
        return out

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_cached_table"}  # not the vocabulary it caches for

    def _table(self, vocab: Vocab) -> np.ndarray:
        """Class of every id of ``vocab``, cached until the vocabulary grows."""
        cached = self.__dict__.get("_cached_table")  # the vocabulary itself, not its id: an id is reused
        if cached is not None and cached[0] is vocab and cached[1] == len(vocab):
            return cached[2]
        table = np.full(len(vocab), len(self.names), np.int32)
        for word, c in zip(self.words, self.classes.tolist()):
            if word in vocab:
                table[vocab.get(word)] = c
        object.__setattr__(self, "_cached_table", (vocab, len(vocab), table))
        return table


@dataclass(frozen=True)
class SparseWeights:
    """Named sparse weights: ``values[i]`` is the weight of ``names[i]`` (``float64[len(names)]``)."""

    names: tuple[str, ...]
    values: np.ndarray

    @classmethod
    def read(cls, path: str | os.PathLike) -> "SparseWeights":
        """A weights file: one ``name value`` per line; ``#`` starts a comment; blank lines are skipped. A block
        name may be spelt as n-best lists write it (``Block_blk:casa|house``, ``nbest_name``), so that names
        copied from a list work: it is held as the weights file's (``blk:casa|house``)."""
        names, values, seen = [], [], {}
        for number, line in read_lines(path):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            fields = text.split()
            if len(fields) != 2:
                raise FormatError(path, number, f"expected 'name value', got {line!r}")
            try:
                value = parse_float(fields[1])
            except ValueError:
                raise FormatError(path, number, f"weight {fields[1]!r} is not a number") from None
            if not np.isfinite(value):
                raise FormatError(path, number, f"weight {fields[1]!r} is not finite")
            name = weight_name(fields[0])
            if name in seen:
                raise FormatError(path, number, f"{name} already has a weight (line {seen[name]})")
            if family_of(name) is None:
                raise FormatError(path, number, f"{name!r} is not a feature name of the families "
                                  f"{list(FAMILIES)} (pb_<class>_<class>; blk:, w:, len:, ori:, bi: names, or "
                                  f"as n-best lists write them, {BLOCK_NBEST_PREFIX}blk:...; "
                                  f"{', '.join(distortion_bins.NAMES)})")
            seen[name] = number
            names.append(name)
            values.append(value)
        return cls(tuple(names), np.array(values, np.float64))

    def write(self, path: str | os.PathLike, outputs: Outputs | None = None) -> None:
        """Write the non-zero weights, largest magnitude first (atomically; into ``outputs``, one run's files
        renamed together, when given)."""
        order = np.argsort(-np.abs(self.values), kind="stable")
        text = "# sparse feature weights (pbmt): name value\n" + "".join(
            f"{self.names[i]} {float(self.values[i])!r}\n" for i in order if self.values[i] != 0.0)
        if outputs is not None:
            outputs.open(path).write(text)
            return
        with atomic_write(path) as handle:
            handle.write(text)


@dataclass(frozen=True)
class BoundaryFeatures:
    """The phrase-boundary family over word classes (see the module docstring).

    Keys: class indices 0 .. K - 1, ``K`` = ``<unk>``, ``K + 1`` = ``<s>``
    as a right key and ``</s>`` as a left key. Feature ``r * n_keys + l`` is
    ``pb_<name of r>_<name of l>``.
    """

    classes: WordClasses

    @property
    def n_keys(self) -> int:
        return len(self.classes.names) + 2

    @property
    def bos(self) -> int:
        """The right key of the sentence start."""
        return len(self.classes.names) + 1

    @property
    def eos(self) -> int:
        """The left key of the sentence end."""
        return len(self.classes.names) + 1

    @property
    def size(self) -> int:
        return self.n_keys * self.n_keys

    def names(self) -> tuple[str, ...]:
        """Every feature name, in id order."""
        return tuple(self.name(i) for i in range(self.size))

    def name(self, feature: int) -> str:
        """The name of feature id ``feature``."""
        right, left = divmod(feature, self.n_keys)
        k = self.classes.names + (UNKNOWN_CLASS,)
        return f"pb_{(k + (SENTENCE_START,))[right]}_{(k + (SENTENCE_END,))[left]}"

    def keys(self, vocab: Vocab, tgt_offsets: np.ndarray, tgt_words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(left_key, right_key), ``int32[n_options]`` each, of options given as a CSR of target word ids.

        Every option has at least one target word (phrase tables reject empty
        phrases; unknown words pass through as themselves).
        """
        tgt_offsets = np.asarray(tgt_offsets, np.int64)
        classes = self.classes.of_ids(vocab, tgt_words)
        return classes[tgt_offsets[:-1]], classes[tgt_offsets[1:] - 1]


def family_of(name: str) -> str | None:
    """The family a feature name belongs to (``boundary``, ``block`` or ``distortion``), or None when it is
    malformed."""
    if name.startswith(BOUNDARY_PREFIX):
        return "boundary"
    if name.startswith(distortion_bins.PREFIX):
        return "distortion" if name in distortion_bins.NAMES else None
    return "block" if is_block_name(name) else None


def nbest_name(name: str) -> str:
    """A sparse feature's name as n-best lists write it (``BLOCK_NBEST_PREFIX`` before a block-family name)."""
    return BLOCK_NBEST_PREFIX + name if family_of(name) == "block" else name


def weight_name(name: str) -> str:
    """The weights-file name of an n-best list's sparse feature ``name`` (``nbest_name`` inverted; a name of
    no family is returned as it is)."""
    inner = name[len(BLOCK_NBEST_PREFIX):]
    return inner if name.startswith(BLOCK_NBEST_PREFIX) and is_block_name(inner) else name


@dataclass(frozen=True)
class SparseModel:
    """A model's sparse features: the boundary family (numbered), the block family (named), or both.

    ``weights``: ``float64[size]``, the boundary family's weights in id order
    (empty without it; a mutable array: online learners update it in place
    and the kernels, which see views of it, follow). ``blocks``: the block
    family's weights, or None. ``block_kinds``: the block family's kinds
    (``pbmt.model.block_features.KINDS``: block = phrase-pair indicators,
    word = source-word/target-word pairs, length, orient, bigram) that n-best
    lists carry, so that PRO and APRO can tune them; the searches score every
    block feature that has a weight. ``jumps``: the distortion-bin family's weights
    (``float64[distortion_bins.SIZE]`` in ``distortion_bins.NAMES`` order), or None. ``in_ini``: the
    families are declared by ``moses.ini`` lines (weights in its ``[weight-file]``), not by ``pbmt.toml``'s
    ``[sparse]`` table; ``write`` writes them back where they came from.
    """

    boundary: BoundaryFeatures | None
    weights: np.ndarray
    blocks: BlockWeights | None = None
    block_kinds: tuple[str, ...] = BLOCK_KINDS
    jumps: np.ndarray | None = None
    in_ini: bool = field(default=False, compare=False)

    def __post_init__(self):
        if self.boundary is None and self.blocks is None and self.jumps is None:
            raise ValueError("a sparse model needs at least one family")
        if self.jumps is not None and np.shape(self.jumps) != (distortion_bins.SIZE,):
            raise ValueError(f"the distortion family has {distortion_bins.SIZE} weights, got {np.shape(self.jumps)}")
        if not self.block_kinds or not set(self.block_kinds) <= set(BLOCK_KINDS):
            raise ValueError(f"block kinds must be among {BLOCK_KINDS}, got {self.block_kinds}")

    @property
    def block_prefixes(self) -> tuple[str, ...]:
        """The name prefixes (``blk:``, ``w:``, ...) of ``block_kinds``."""
        return tuple(prefix for kind, prefix in zip(BLOCK_KINDS, BLOCK_PREFIXES) if kind in self.block_kinds)

    @classmethod
    def empty(cls, families: Iterable[str], classes: WordClasses | None = None,
              block_kinds: Iterable[str] = BLOCK_KINDS, in_ini: bool = False) -> "SparseModel":
        """The ``families`` with zero weights (the boundary family over ``classes``)."""
        families = set(families)
        boundary = BoundaryFeatures(classes) if "boundary" in families else None
        return cls(boundary, np.zeros(boundary.size if boundary else 0),
                   BlockWeights([], np.zeros(0)) if "block" in families else None, tuple(block_kinds),
                   np.zeros(distortion_bins.SIZE) if "distortion" in families else None, in_ini)

    @classmethod
    def new(cls, classes: WordClasses) -> "SparseModel":
        """The boundary family over ``classes`` with zero weights."""
        family = BoundaryFeatures(classes)
        return cls(family, np.zeros(family.size))

    @classmethod
    def of_blocks(cls, blocks: BlockWeights) -> "SparseModel":
        """The block family alone, with these weights."""
        return cls(None, np.zeros(0), blocks)

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(f for f, present in zip(FAMILIES, (self.boundary, self.blocks, self.jumps)) if present is not None)

    @property
    def size(self) -> int:
        """Number of boundary weights (the numbered family SampleRank tunes)."""
        return self.boundary.size if self.boundary is not None else 0

    def names(self) -> tuple[str, ...]:
        """The boundary features' names, in id order."""
        return self.boundary.names() if self.boundary is not None else ()

    @property
    def pair_weight(self) -> np.ndarray:
        """``float64[n_keys, n_keys]``: a view of the boundary weights by (right key, left key)."""
        k = self.boundary.n_keys
        return self.weights[:k * k].reshape(k, k)

    def with_weights(self, weights: np.ndarray) -> "SparseModel":
        """The same features with a copy of ``weights`` (the boundary family's, ``float64[size]``)."""
        weights = np.array(weights, dtype=np.float64)
        if weights.shape != (self.size,):
            raise ValueError(f"expected {self.size} sparse weights, got shape {weights.shape}")
        return replace(self, weights=weights)

    def named_weights(self) -> SparseWeights:
        """Every family's weights by name."""
        names, values = list(self.names()), [self.weights]
        if self.blocks is not None:
            names += list(self.blocks.weight)
            values.append(np.fromiter(self.blocks.weight.values(), np.float64, len(self.blocks)))
        if self.jumps is not None:
            names += distortion_bins.NAMES
            values.append(self.jumps)
        return SparseWeights(tuple(names), np.concatenate(values))

    def weights_from(self, named: SparseWeights, source: str | os.PathLike = "<weights>") -> "SparseModel":
        """This model with the weights of ``named`` (a name of a family the model lacks, or a boundary name
        outside its classes, is an error naming ``source``)."""
        index = {n: i for i, n in enumerate(self.names())}
        weights = np.zeros(self.size)
        jumps = None if self.jumps is None else np.zeros(distortion_bins.SIZE)
        block_names, block_values = [], []
        for name, value in zip(named.names, named.values):
            family = family_of(name)
            if family not in self.families:
                raise PbmtError(f"{source}: {name} is a feature of the {family} family, which the model does not "
                                f"declare (its families: {', '.join(self.families)})")
            if family == "block":
                block_names.append(name)
                block_values.append(value)
            elif family == "distortion":
                jumps[distortion_bins.NAMES.index(name)] = value
            elif name in index:
                weights[index[name]] = value
            else:
                raise PbmtError(f"{source}: {name} is not a feature of the boundary family "
                                f"(pb_<class>_<class> of the class file)")
        blocks = BlockWeights(block_names, np.array(block_values)) if self.blocks is not None else None
        return replace(self, weights=weights, blocks=blocks, jumps=jumps)

    @classmethod
    def read(cls, folder: str | os.PathLike) -> "SparseModel | None":
        """The ``[sparse]`` table of ``folder/pbmt.toml`` with its files, or None when there is none."""
        path = Path(folder) / "pbmt.toml"
        table = read_tables(folder).get("sparse")
        if table is None:
            return None
        check_keys(folder, "sparse", table, ("families", "classes", "weights", "block-kinds"))
        families = table.get("families", ["boundary"])
        if not families or not set(families) <= set(FAMILIES) or len(set(families)) != len(families):
            raise PbmtError(f"{path}: [sparse] families must be distinct families among {list(FAMILIES)}, "
                            f"got {families}")
        if "boundary" in families and "classes" not in table:
            raise PbmtError(f"{path}: [sparse] needs classes = \"<class file>\" for the boundary family")
        boundary = (BoundaryFeatures(WordClasses.read(Path(folder) / table["classes"]))
                    if "boundary" in families else None)
        kinds = table.get("block-kinds", list(BLOCK_KINDS))
        if not isinstance(kinds, list) or not kinds or not set(kinds) <= set(BLOCK_KINDS):
            raise PbmtError(f"{path}: [sparse] block-kinds must be a list of kinds among {list(BLOCK_KINDS)}, "
                            f"got {kinds}")
        model = cls.empty(families, boundary.classes if boundary else None, kinds)
        if "weights" in table:
            weights_path = Path(folder) / table["weights"]
            model = model.weights_from(SparseWeights.read(weights_path), weights_path)
        return model

    def write(self, folder: str | os.PathLike, tables: dict[str, dict] | None = None) -> None:
        """Write the class file (boundary family), the weights file and ``pbmt.toml`` to ``folder``; ``tables``:
        the other tables of ``pbmt.toml`` (``[preprocess]``, ``[search]``). Families declared in ``moses.ini``
        (``in_ini``) get the weights file alone: the ini written to ``folder`` names it in ``[weight-file]``
        (``pbmt.tune.loop.tuned_config``) and its lines name the class file."""
        folder = Path(folder)
        if self.in_ini:
            self.named_weights().write(folder / WEIGHTS_FILE)
            write_tables(folder, tables or {})
            return
        sparse = {"families": list(self.families)}
        if self.boundary is not None:
            self.boundary.classes.write(folder / CLASSES_FILE)
            sparse["classes"] = CLASSES_FILE
        self.named_weights().write(folder / WEIGHTS_FILE)
        sparse["weights"] = WEIGHTS_FILE
        if self.blocks is not None and self.block_kinds != BLOCK_KINDS:
            sparse["block-kinds"] = list(self.block_kinds)
        write_tables(folder, {**(tables or {}), "sparse": sparse})


class SparseFamily(FeatureFunction):
    """A sparse family declared by its ``moses.ini`` line: no columns, nothing of its own to score (the model's
    ``SparseModel`` scores the families), its weights in the file ``[weight-file]`` names. Its name is fixed:
    the prefix of its features' names."""

    options: ClassVar[tuple[str, ...]] = ()  # the keys its line takes besides name=

    def __init__(self, spec: Feature, config: MosesConfig, vocab: Vocab | None = None):
        super().__init__(spec, config, vocab)
        where, prefix = config.path or "moses.ini", FEATURE_TYPES[self.moses_name].default_name
        if spec.name != prefix:
            raise FormatError(where, spec.line, f"{spec.type} names its features {prefix}_... in n-best lists and "
                              f"weights, so its name is {prefix}, not {spec.name!r}")
        unknown = sorted(set(spec.args) - set(self.options))
        if unknown:
            raise FormatError(where, spec.line, f"{spec.type} takes no {', '.join(k + '=' for k in unknown)}"
                              + (f" (it takes {', '.join(k + '=' for k in self.options)})" if self.options else ""))


@register
class ClassBoundaryFeature(SparseFamily):
    """The boundary family: ``pb_<A>_<B>`` for the target word classes on each side of every phrase boundary
    (``path=``: the class file, ``word<TAB>class`` per line)."""

    moses_name = "ClassBoundaryFeature"
    sparse_family = "boundary"
    options = ("path",)


@register
class BlockFeature(SparseFamily):
    """The block family (``pbmt.model.block_features``); ``kinds=`` (comma-separated, default all of
    ``KINDS``): the kinds n-best lists carry, so that tuners see them."""

    moses_name = "BlockFeature"
    sparse_family = "block"
    options = ("kinds",)

    def __init__(self, spec: Feature, config: MosesConfig, vocab: Vocab | None = None):
        super().__init__(spec, config, vocab)
        self.kinds = tuple(spec.args["kinds"].split(",")) if "kinds" in spec.args else BLOCK_KINDS
        if not set(self.kinds) <= set(BLOCK_KINDS) or len(set(self.kinds)) != len(self.kinds):
            raise FormatError(config.path or "moses.ini", spec.line, f"kinds={spec.args['kinds']} must be distinct "
                              f"kinds among {','.join(BLOCK_KINDS)}, separated by commas")


@register
class DistortionBinFeature(SparseFamily):
    """The distortion-bin family (``pbmt.model.distortion_bins``): ``db_0``, ``db_f1`` ... ``db_b9+``."""

    moses_name = "DistortionBinFeature"
    sparse_family = "distortion"


def read_sparse(config: MosesConfig) -> SparseModel | None:
    """The sparse families of a model, with their weights: those its ``moses.ini`` lines declare (weights from
    its ``[weight-file]``), else those of the ``[sparse]`` table of the ``pbmt.toml`` beside it, else None.

    A ``[weight-file]`` in an ini that declares no family is left alone, as Moses leaves the weights of
    features it does not have."""
    where = config.path or "moses.ini"
    folder = Path(config.path).parent if config.path else None
    families = {}
    for spec in config.sparse_features:
        feature = FEATURES[spec.type](spec, config)
        families[feature.sparse_family] = feature
    table = SparseModel.read(folder) if folder is not None else None
    if not families:
        return table
    if table is not None:
        first = config.sparse_features[0]
        raise FormatError(where, first.line, f"{first.type} declares a sparse family and {folder / TOML_FILE} has a "
                          f"[sparse] table too: declare them in one place (delete [sparse], naming its weights file "
                          f"in [{WEIGHT_FILE}])")
    boundary = families.get("boundary")
    classes = WordClasses.read(config.resolve(boundary.spec.args["path"])) if boundary else None
    kinds = families["block"].kinds if "block" in families else BLOCK_KINDS
    model = SparseModel.empty(families, classes, kinds, in_ini=True)
    path = config.weight_file
    if path is None:
        return model
    if not path.is_file():
        line = config.setting_lines.get(WEIGHT_FILE)
        raise FormatError(where, line + 1 if line else None, f"[{WEIGHT_FILE}] names no file ({path})")
    return model.weights_from(SparseWeights.read(path), path)


def sparse_files(folder: str | os.PathLike) -> list[str]:
    """The relative paths of the files the ``[sparse]`` table of ``folder/pbmt.toml`` names (none without one)."""
    table = read_tables(folder).get("sparse") or {}
    return [table[key] for key in ("classes", "weights") if key in table and not Path(table[key]).is_absolute()]


def boundary_ids(left_key: np.ndarray, right_key: np.ndarray, options: Iterable[int], family: BoundaryFeatures
                 ) -> np.ndarray:
    """Feature ids ``int64[m]`` fired by a derivation's options in target order (one per boundary, repeats kept).

    From scratch: the reference the kernels' incremental scores are tested
    against (``pbmt.search.derivation.sparse_features`` wraps it).
    """
    options = [int(o) for o in options]
    keys = [family.bos] + [int(right_key[o]) for o in options]
    lefts = [int(left_key[o]) for o in options] + [family.eos]
    return np.array([r * family.n_keys + l for r, l in zip(keys, lefts)], np.int64)
