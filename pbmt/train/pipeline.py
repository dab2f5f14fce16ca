"""The training pipeline behind ``pbmt train``: from a parallel text to a model
folder that ``pbmt translate`` and Moses load.

The steps, each a function below, run in order by ``StepRunner``:

1. ``prepare_corpus``: optional tokenisation (sacremoses, as the shared
   ``*.tok.*`` files were made), then truecasing (a Moses truecaser learnt on
   each side, written to the model folder; the default for cased text) or
   lowercasing; sentence pairs with an empty side are dropped, as Moses's
   ``clean-corpus-n.perl`` drops them (no length limit is applied: long
   sentences stay), and given alignments lose the same lines.
2. ``align_corpus``: eflomal in both directions, or given directed
   alignments, symmetrised with grow-diag-final-and. Skipped when a
   symmetrised alignment is given.
3. ``train_tables``: phrase extraction, scoring and msd-bidirectional-fe
   reordering (steps 4-7 of Moses's ``train-model.perl``), optional pruning
   applied to both tables alike, and the word translation tables.
4. ``train_lm``: a modified Kneser-Ney LM of the target side, as lmplz
   estimates it; or ``copy_lm``: a given ARPA file.
5. ``train_osm`` (with ``--osm ORDER``): the operation sequence of every
   aligned pair (``pbmt.train.osm``) and a Kneser-Ney model of that order
   over them, Moses's ``OpSequenceModel`` feature (``osm.arpa.gz``).
6. ``induce_classes`` (``pbmt.train.word_classes``): target word classes for
   sparse features (``word-classes.txt``; ``pbmt tune --features boundary``
   uses them).
7. ``write_config``: ``moses.ini`` with ``train-model.perl``'s default
   (untuned) weights, and ``pbmt.toml`` with the preprocessing.

The model folder holds ``moses.ini``, ``pbmt.toml``, ``phrase-table.gz``,
``reordering-table.gz``, ``lm.arpa.gz`` and, when truecased, the truecaser
models ``truecase-model.source.gz`` and ``truecase-model.target.gz``, referred to
by relative paths.
Intermediate files (the prepared corpus, alignments, ``lex.e2f.gz``,
``lex.f2e.gz``) and the steps' stamps go to a work folder.

Resuming: after a step, its stamp (``WORK/steps/NAME.json``) records its
options and the size, modification time and SHA-256 of its input and output
files. A step is skipped when its options are the same, its inputs have the
same content (a changed modification time alone only costs a hash) and its
outputs are as it left them. Every step reads its inputs from files, so a step
that runs again and writes the same content leaves the later steps skipped.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from tqdm import tqdm

from pbmt.base.config import Feature, MosesConfig
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import Outputs, atomic_write, left_clean_on_failure, lock_folder, open_binary, read_lines
from pbmt.model.lm import NgramLM
from pbmt.model.model import Preprocessing
from pbmt.base.pbmt_toml import write_tables
from pbmt.model.sparse import CLASSES_FILE
from pbmt.base.placeholders import classes, unmarked
from pbmt.base.protected import ProtectedPatterns
from pbmt.base.text import BUILT_IN, CASINGS, Truecaser, lowercased, tokenizer, tokens
from pbmt.train.align import eflomal_align
from pbmt.train.corpus import (
    alignment_points,
    read_alignment,
    read_corpus,
    write_alignment,
)
from pbmt.train.lm_estimate import DEFAULT_MEMORY, write_lm
from pbmt.train.osm import write_operation_corpus
from pbmt.train.score import write_word_translation
from pbmt.train.shards import DEFAULT_SHARD_SENTENCES, build_tables
from pbmt.train.steps import Step, StepReport, StepRunner
from pbmt.train.symmetrize import symmetrize
from pbmt.train.word_classes import induce_classes
from pbmt.base.vocab import Vocab

PHRASE_TABLE = "phrase-table.gz"
REORDERING_TABLE = "reordering-table.gz"
LM_FILE = "lm.arpa.gz"
OSM_FILE = "osm.arpa.gz"
TRUECASER_FILES = ("truecase-model.source.gz", "truecase-model.target.gz")
REORDERING_TYPE = "wbe-msd-bidirectional-fe-allff"

#: The weights ``train-model.perl`` writes into a new moses.ini (not tuned), but the OSM's gap count (its third
#: column), which starts at 0 where Moses starts it at 0.02: MERT keeps a weight's sign, so a positive start lets
#: it only reward opening gaps, and tuning from there moved most of the weight onto it (docs/osm.md); from 0,
#: tuning picks its sign.
DEFAULT_WEIGHTS: dict[str, tuple[float, ...]] = {
    "UnknownWordPenalty0": (1.0,),
    "WordPenalty0": (-1.0,),
    "PhrasePenalty0": (0.2,),
    "TranslationModel0": (0.2,) * 4,
    "LexicalReordering0": (0.3,) * 6,
    "Distortion0": (0.3,),
    "LM0": (0.5,),
    "OpSequenceModel0": (0.08, -0.02, 0.0, -0.001, 0.03),
}
DEFAULT_DISTORTION_LIMIT = 6


# --- the steps ----------------------------------------------------------------


@dataclass(frozen=True)
class PreparedCorpus:
    """What ``prepare_corpus`` kept: ``n_pairs`` sentence pairs; ``dropped``,
    the 1-based line numbers of the pairs dropped for an empty side."""

    n_pairs: int
    dropped: tuple[int, ...]


def prepare_corpus(
    src: Path,
    tgt: Path,
    out_src: Path,
    out_tgt: Path,
    src_tokenizer: Callable[[str], list[str]],
    tgt_tokenizer: Callable[[str], list[str]],
    alignments: dict[Path, Path] | None = None,
    progress: bool = False,
    casing: str = "none",
    truecasers: tuple[Path, Path] | None = None,
    protected: ProtectedPatterns = BUILT_IN,
    placeholders: bool = False,
) -> PreparedCorpus:
    """Tokenise the line-parallel texts ``src`` and ``tgt`` (plain or gzip) into
    ``out_src`` and ``out_tgt`` (tokens joined by single spaces), without the
    pairs that have an empty side.

    ``casing`` (``pbmt.base.text.CASINGS``): ``truecase`` learns a truecaser on
    each side's tokens, writes it to ``truecasers`` (source, target) and
    truecases the text with it; ``lowercase`` lowercases; ``none`` keeps the
    text's casing. Protected tokens (``protected``) keep theirs; with
    ``placeholders`` they and the numbers become class tokens and accelerator
    marks come off (``pbmt.base.placeholders``).

    ``alignments`` maps given alignment files (``i-j`` per line of the input
    texts, positions in the tokenised sentences) to where their kept lines go;
    each is checked against the tokenised sentences. Raises PbmtError when the
    texts differ in length (naming both files and the first unmatched line),
    FormatError for a bad alignment line.
    """
    given = list((alignments or {}).items())
    _check_lengths(src, tgt, given)
    cased, models = zip(*(_casing(casing, path, tokenize, progress, protected, placeholders)
                          for path, tokenize in zip((src, tgt), (src_tokenizer, tgt_tokenizer))))
    readers = [read_lines(src), read_lines(tgt)] + [read_lines(path) for path, _ in given]
    dropped: list[int] = []
    kept = 0
    with Outputs() as outputs:
        out_src_handle, out_tgt_handle = outputs.open(out_src), outputs.open(out_tgt)
        alignment_handles = [outputs.open(out) for _, out in given]
        for lines in tqdm(zip(*readers), desc="corpus", unit="pair", disable=not progress or None):
            (number, src_line), (_, tgt_line) = lines[0], lines[1]
            f, e = cased[0](src_line), cased[1](tgt_line)
            for path, words in ((src, f), (tgt, e)):
                if any(FIELD_SEPARATOR in word for word in words):
                    raise FormatError(path, number, f"a token holds {FIELD_SEPARATOR!r}, the phrase table's field "
                                                    "separator: the model would not load; replace it (Moses's "
                                                    "tokeniser escapes '|' as '&#124;')")
            for (path, _), handle, line in zip(given, alignment_handles, lines[2:]):
                points = alignment_points(path, line[0], line[1], len(f), len(e))
                if f and e:
                    handle.write(" ".join(f"{i}-{j}" for i, j in points) + "\n")
            if f and e:
                out_src_handle.write(" ".join(f) + "\n")
                out_tgt_handle.write(" ".join(e) + "\n")
                kept += 1
            else:
                dropped.append(number)
        if not kept:
            raise PbmtError(f"{src}, {tgt}: no line pair has words on both sides ({len(dropped):,} lines): "
                            "nothing to train on")
    for model, path in zip(models, truecasers or ()):  # written once the corpus is: a refused text leaves none
        model.write(path)
    return PreparedCorpus(kept, tuple(dropped))


FIELD_SEPARATOR = "|||"


def _check_lengths(src: Path, tgt: Path, given: list) -> None:
    """Raise, before anything is read in step, when the inputs differ in length: a PbmtError naming both texts
    and the first unmatched line, or a FormatError naming an alignment file of another length. Counted first,
    so that a line missing from one text is reported as such, not as the first alignment line it shifts."""
    n_src, n_tgt = (sum(1 for _ in read_lines(path)) for path in (src, tgt))
    if n_src != n_tgt:
        (longer, n_long), (shorter, n_short) = sorted(((src, n_src), (tgt, n_tgt)), key=lambda x: -x[1])
        raise PbmtError(f"{longer} has {n_long} lines but {shorter} has {n_short}: "
                        f"line {n_short + 1} of {longer} has no counterpart")
    for path, _ in given:
        n_lines = sum(1 for _ in read_lines(path))
        if n_lines != n_src:
            raise FormatError(path, None, f"{n_lines} lines, but the texts have {n_src}")


def _casing(casing: str, text: Path, tokenize: Callable[[str], list[str]], progress: bool,
            protected: ProtectedPatterns, placeholders: bool) -> tuple[Callable[[str], list[str]], Truecaser | None]:
    """A line's tokens in the casing asked for, with class tokens if ``placeholders``, and the truecaser that
    ``truecase`` first learns on ``text`` (one pass; None for the other casings)."""
    split = (lambda line: unmarked(tokenize(line), protected)) if placeholders else tokenize
    model = None
    if casing == "lowercase":
        cased = lambda line: lowercased(split(line), protected)  # noqa: E731
    elif casing == "truecase":
        lines = tqdm(read_lines(text), desc=f"truecaser of {text.name}", unit="line", disable=not progress or None)
        model = Truecaser.train((split(line) for _, line in lines), protected)
        cased = lambda line: model.truecase(split(line))  # noqa: E731
    else:
        cased = split
    return ((lambda line: classes(cased(line), protected)) if placeholders else cased), model


def align_corpus(src: Path, tgt: Path, fwd: Path, rev: Path, out: Path, run_eflomal: bool, quiet: bool = True) -> int:
    """Write the grow-diag-final-and alignment of the tokenised texts ``src``
    and ``tgt`` to ``out``; returns the number of alignment points.

    ``fwd``/``rev``: the directed alignments, which eflomal makes and writes
    there when ``run_eflomal`` (both directions; ``quiet=False`` shows its
    progress), else read from there.
    """
    src_corpus = read_corpus(src)
    tgt_corpus = read_corpus(tgt)
    if run_eflomal:
        forward, backward = eflomal_align(src_corpus, tgt_corpus, quiet=quiet)
        write_alignment(fwd, forward)
        write_alignment(rev, backward)
    else:
        forward = read_alignment(fwd, src_corpus, tgt_corpus)
        backward = read_alignment(rev, src_corpus, tgt_corpus)
    alignment = symmetrize(forward, backward, src_corpus.lengths, tgt_corpus.lengths)
    write_alignment(out, alignment)
    return len(alignment.src)


@dataclass(frozen=True)
class Scale:
    """Where and in what pieces the corpus-sized steps run; the model is the
    same whatever they are. ``shard_sentences``: sentence pairs per
    extraction shard; ``workers``/``scheduler``: run the shards on that many
    local processes or on a dask cluster (``pbmt.base.parallel``); ``memory``:
    bytes of the LM estimation's buffers (``pbmt.train.lm_estimate``)."""

    shard_sentences: int = DEFAULT_SHARD_SENTENCES
    workers: int = 1
    scheduler: str | None = None
    memory: int = DEFAULT_MEMORY


@dataclass(frozen=True)
class TableCounts:
    """Phrase pairs ``extracted`` (distinct) and ``written`` after pruning."""

    extracted: int
    written: int


def train_tables(
    src: Path,
    tgt: Path,
    alignment: Path,
    phrase_table: Path,
    reordering_table: Path,
    lex_e2f: Path,
    lex_f2e: Path,
    max_phrase_length: int = 7,
    min_count: int = 1,
    prune_limit: int | None = None,
    log: Callable[[str], None] = lambda message: None,
    scale: Scale = Scale(),
    scratch: Path | None = None,
    progress: bool = False,
) -> TableCounts:
    """Extract and score the phrase pairs of the aligned texts and write the
    phrase table, the msd-bidirectional-fe reordering table and the word
    translation tables (Moses's formats and numbers).

    ``min_count``: drop the pairs whose source phrase has two or more words
    and that were extracted fewer times (single-word pairs all stay, so no
    training word loses its translations); ``prune_limit``: then keep at most
    this many pairs per source phrase, those with the highest φ(e|f)
    (``pbmt.train.filter.prune_rows``). Both keep the scores as computed on
    all pairs, and apply to both tables alike.

    Extraction runs in shards as ``scale`` says (``pbmt.train.shards``), with
    its runs in ``scratch`` (default: a folder beside the phrase table),
    which must be shared with the workers of a cluster.
    """
    src_corpus = read_corpus(src)
    tgt_corpus = read_corpus(tgt)
    aligned = read_alignment(alignment, src_corpus, tgt_corpus)
    scratch = scratch if scratch is not None else phrase_table.parent / f".{phrase_table.name}.shards"
    counts, lexicon = build_tables(
        src_corpus, tgt_corpus, aligned, phrase_table, reordering_table, scratch, max_phrase_length, min_count,
        prune_limit, scale.shard_sentences, scale.workers, scale.scheduler, progress=progress, log=log,
    )
    write_word_translation(lex_e2f, lex_f2e, lexicon)
    return TableCounts(counts.extracted, counts.written)


def train_lm(text: Path, out: Path, order: int, discount_fallback: tuple[float, float, float] | None = None,
             memory: int = DEFAULT_MEMORY, work: Path | None = None, progress: bool = False) -> list[int]:
    """Estimate an interpolated modified Kneser-Ney LM of ``order`` from the
    tokenised ``text`` (``pbmt.train.lm_estimate``, equal to lmplz) and write
    it as ARPA to ``out``; returns the number of n-grams of each order.
    ``discount_fallback``: the discounts (adjusted counts 1, 2, 3+) used where
    the closed-form ones fail (tiny corpora), as lmplz's; None: such a corpus
    is an error. ``memory``: bytes of counts held at a time, the rest on disk
    in ``work`` (default: beside ``out``)."""
    return list(write_lm(text, order, out, discount_fallback, memory, work, progress).ngrams)


def arpa_order(path: Path) -> int:
    """The highest n-gram order of an ARPA file (plain or gzip), from its
    ``\\data\\`` header; FormatError if there is none."""
    order = 0
    for _, line in read_lines(path):
        name, equals, _ = line.strip().partition("=")
        if name.startswith("ngram ") and equals and name[6:].strip().isdigit():
            order = max(order, int(name[6:]))
        elif line.startswith("\\1-grams:"):
            break
    if not order:
        raise FormatError(path, None, "no ARPA \\data\\ header with 'ngram N=count' lines")
    return order


def copy_lm(given: Path, out: Path) -> int:
    """Copy the ARPA file ``given`` to ``out`` (recompressed as ``out``'s
    name says); returns its order."""
    order = arpa_order(given)
    with open_binary(given) as source, atomic_write(out, "wb") as target:
        shutil.copyfileobj(source, target, 1 << 20)
    return order


def train_osm(src: Path, tgt: Path, alignment: Path, operations: Path, out: Path, order: int,
              discount_fallback: tuple[float, float, float] | None = None, memory: int = DEFAULT_MEMORY,
              work: Path | None = None, progress: bool = False) -> str:
    """Write the operation sequences of the aligned tokenised texts to ``operations`` and estimate a
    Kneser-Ney model of ``order`` over them (``train_lm``) into ``out``: the operation sequence model Moses's
    ``OSM-Train.perl`` makes (without its pruning of singleton 3-grams and longer). Returns a summary."""
    corpus = write_operation_corpus(src, tgt, alignment, operations)
    ngrams = train_lm(operations, out, order, discount_fallback, memory, work, progress)
    return (f"{corpus.operations:,} operations of {corpus.sentences:,} sentence pairs ({corpus.identical:,} "
            f"words generated identical); n-grams by order: {' '.join(f'{n:,}' for n in ngrams)}")


def lm_file(index: int) -> str:
    """The model folder's name of its LM number ``index`` (``LM_FILE``, then ``lm1.arpa.gz``, ...)."""
    return LM_FILE if index == 0 else f"lm{index}.arpa.gz"


def lm_step(index: int) -> str:
    """The name of the step that writes LM number ``index`` (``lm``, then ``lm1``, ...): its stamp's name."""
    return "lm" if index == 0 else f"lm{index}"


def default_config(lm_orders: Sequence[int], osm: bool = False) -> MosesConfig:
    """The moses.ini ``train-model.perl`` writes for a phrase-based model with
    an msd-bidirectional-fe reordering table and a KenLM LM of each of
    ``lm_orders`` (``LM0``, ``LM1``, ... in the files ``lm_file`` names), and
    with ``osm`` an operation sequence model (``OSM_FILE``): the model files by
    their names in ``pbmt.train.pipeline``, relative to the ini's folder, and
    ``DEFAULT_WEIGHTS``, ``LM0``'s weight shared evenly among the LMs: an
    untuned second LM at the full weight doubles the LMs' share of the score,
    which cost 5 BLEU on the shared Bible model (``docs/osm.md``)."""
    features = (
        Feature("UnknownWordPenalty", "UnknownWordPenalty0", 1),
        Feature("WordPenalty", "WordPenalty0", 1),
        Feature("PhrasePenalty", "PhrasePenalty0", 1),
        Feature("PhraseDictionaryMemory", "TranslationModel0", 4, {
            "num-features": "4", "path": PHRASE_TABLE, "input-factor": "0", "output-factor": "0"}),
        Feature("LexicalReordering", "LexicalReordering0", 6, {
            "num-features": "6", "type": REORDERING_TYPE, "input-factor": "0", "output-factor": "0",
            "path": REORDERING_TABLE}),
        Feature("Distortion", "Distortion0", 1),
        *(Feature("KENLM", f"LM{i}", 1, {"factor": "0", "path": lm_file(i), "order": str(order)})
          for i, order in enumerate(lm_orders)),
        *((Feature("OpSequenceModel", "OpSequenceModel0", 5, {"num-features": "5", "path": OSM_FILE}),)
          if osm else ()),
    )
    settings = {"input-factors": ("0",), "mapping": ("0 T 0",), "distortion-limit": (str(DEFAULT_DISTORTION_LIMIT),)}
    weights = {name: value for name, value in DEFAULT_WEIGHTS.items() if osm or name != "OpSequenceModel0"}
    lm_weight = tuple(value / max(1, len(lm_orders)) for value in DEFAULT_WEIGHTS["LM0"])
    weights.update({f"LM{i}": lm_weight for i in range(len(lm_orders))})
    return MosesConfig(features, weights, settings)


def write_preprocessing(path: Path, preprocessing: Preprocessing) -> None:
    """Write ``pbmt.toml`` with the ``[preprocess]`` table ``Preprocessing.read`` reads."""
    write_tables(path.parent, {"preprocess": preprocessing.table(path.parent)})


def detect_casing(paths: Iterable[Path]) -> str:
    """``truecase`` when a text has an uppercase letter, else ``none`` (text that is lowercase already)."""
    cased = any(any(c.isupper() for c in line) for path in paths for _, line in read_lines(path))
    return "truecase" if cased else "none"


# --- the pipeline -------------------------------------------------------------


@dataclass(frozen=True)
class TrainSettings:
    """What ``pbmt train`` is asked to do (see its --help).

    ``src``/``tgt``: line-parallel texts; ``out``: the model folder; ``work``:
    the folder of intermediate files and stamps (None: ``out/work``).
    ``alignment``: a symmetrised alignment of the (tokenised) texts to use
    instead of aligning; ``alignment_fwd``/``alignment_rev``: directed
    alignments to symmetrise instead of running eflomal. ``lms``: ARPA files
    to use as the model's LMs; ``lm_orders``: the order of each LM estimated
    from the target text, the model's first LMs in this order, before ``lms``
    (empty: a 3-gram when ``lms`` is empty, else none). ``osm_order``: the order of an operation sequence model
    (``train_osm``; None: none). ``word_classes``: how
    many target word classes to induce (0: none). ``scale``: shards and
    workers of the corpus-sized steps (the model does not depend on them).
    ``casing``: one of ``pbmt.base.text.CASINGS``, or ``auto``: ``truecase`` for
    cased text, ``none`` for text without capitals. ``protected``: a file of
    protected patterns (``pbmt.base.protected``) beside the built-in ones, copied
    into the model folder; ``placeholders``: train on class tokens
    (``pbmt.base.placeholders``).
    """

    src: Path
    tgt: Path
    out: Path
    work: Path | None = None
    src_lang: str = "es"
    tgt_lang: str = "en"
    tokenize: bool = False
    casing: str = "auto"
    alignment: Path | None = None
    alignment_fwd: Path | None = None
    alignment_rev: Path | None = None
    max_phrase_length: int = 7
    min_count: int = 1
    prune: int | None = None
    lms: tuple[Path, ...] = ()
    lm_orders: tuple[int, ...] = ()
    discount_fallback: tuple[float, float, float] | None = None
    osm_order: int | None = None
    word_classes: int = 50
    scale: Scale = Scale()
    protected: Path | None = None
    placeholders: bool = False

    @property
    def work_dir(self) -> Path:
        return self.work if self.work is not None else self.out / "work"


def training_steps(settings: TrainSettings, log: Callable[[str], None] = lambda m: None,
                   progress: bool = False) -> list[Step]:
    """The steps that train the model ``settings`` describe, in order."""
    s = settings
    if s.alignment is not None and (s.alignment_fwd is not None or s.alignment_rev is not None):
        raise PbmtError("give either a symmetrised alignment or the two directed ones, not both")
    if (s.alignment_fwd is None) != (s.alignment_rev is None):
        raise PbmtError("directed alignments come in pairs: give both the forward and the reverse one")
    for given in (s.src, s.tgt, s.alignment, s.alignment_fwd, s.alignment_rev, *s.lms, s.protected):
        if given is not None and not Path(given).is_file():
            raise PbmtError(f"{given}: " + ("is a directory, expected a file" if Path(given).is_dir() else "no such file"))
    work, out = s.work_dir, s.out
    corpus_src, corpus_tgt = work / "corpus.src", work / "corpus.tgt"
    gdfa, fwd, rev = work / "alignment.gdfa", work / "alignment.fwd", work / "alignment.rev"
    eflomal = s.alignment is None and s.alignment_fwd is None
    if s.alignment is not None:
        given = {s.alignment: gdfa}
    elif not eflomal:
        given = {s.alignment_fwd: fwd, s.alignment_rev: rev}
    else:
        given = {}

    casing = detect_casing((s.src, s.tgt)) if s.casing == "auto" else s.casing
    if casing not in CASINGS:
        raise PbmtError(f"unknown casing {s.casing!r}; known: auto, {', '.join(CASINGS)}")
    truecasers = tuple(out / name for name in TRUECASER_FILES) if casing == "truecase" else ()

    patterns = ProtectedPatterns.read(s.protected) if s.protected else BUILT_IN

    def corpus() -> str:
        prepared = prepare_corpus(
            s.src, s.tgt, corpus_src, corpus_tgt,
            tokenizer(s.src_lang, patterns) if s.tokenize else tokens,
            tokenizer(s.tgt_lang, patterns) if s.tokenize else tokens,
            given, progress, casing, truecasers or None, patterns, s.placeholders,
        )
        summary = f"{prepared.n_pairs:,} sentence pairs"
        if prepared.dropped:
            lines = ", ".join(map(str, prepared.dropped[:5])) + (", ..." if len(prepared.dropped) > 5 else "")
            summary += f"; dropped {len(prepared.dropped):,} with an empty side (lines {lines})"
        return summary + (f"; {casing}d" if casing != "none" else "")

    preprocessing = Preprocessing(s.tokenize, casing == "lowercase", casing == "truecase", s.src_lang, s.tgt_lang,
                                  *(truecasers or (None, None)), s.protected, s.placeholders)
    preprocess = {"tokenize": s.tokenize, "casing": casing, "languages": [s.src_lang, s.tgt_lang],
                  "protected": list(patterns.extra), "placeholders": s.placeholders}
    steps = [Step("corpus", (s.src, s.tgt, *given), (corpus_src, corpus_tgt, *given.values(), *truecasers),
                  {"preprocess": preprocess}, corpus)]
    if s.alignment is None:
        directed = (fwd, rev)
        steps.append(Step(
            "align", (corpus_src, corpus_tgt) + (() if eflomal else directed), (directed if eflomal else ()) + (gdfa,),
            {"aligner": "eflomal" if eflomal else "given", "symmetrization": "grow-diag-final-and"},
            lambda: f"{align_corpus(corpus_src, corpus_tgt, fwd, rev, gdfa, eflomal, quiet=not progress):,} "
                    "alignment points",
        ))

    def tables() -> str:
        counts = train_tables(corpus_src, corpus_tgt, gdfa, out / PHRASE_TABLE, out / REORDERING_TABLE,
                              work / "lex.e2f.gz", work / "lex.f2e.gz", s.max_phrase_length, s.min_count,
                              s.prune, log, s.scale, work / "shards", progress)
        return f"{counts.extracted:,} phrase pairs extracted, {counts.written:,} written"

    steps.append(Step(
        "tables", (corpus_src, corpus_tgt, gdfa),
        (out / PHRASE_TABLE, out / REORDERING_TABLE, work / "lex.e2f.gz", work / "lex.f2e.gz"),
        {"max_phrase_length": s.max_phrase_length, "min_count": s.min_count, "prune": s.prune}, tables,
    ))
    lm_orders: list[int] = []
    for estimated in s.lm_orders or ((3,) if not s.lms else ()):
        lm_orders.append(estimated)
        target = out / lm_file(len(lm_orders) - 1)
        steps.append(Step(
            lm_step(len(lm_orders) - 1), (corpus_tgt,), (target,),
            {"order": estimated, "discount_fallback": s.discount_fallback},
            lambda estimated=estimated, target=target: "n-grams by order: " + " ".join(
                f"{n:,}" for n in train_lm(corpus_tgt, target, estimated, s.discount_fallback,
                                           s.scale.memory, work, progress)),
        ))
    for lm_path in s.lms:
        # read whole: a model must not be trained with an LM that does not load (a truncated file), which the
        # error names with its line
        lm_orders.append(NgramLM.load(lm_path, Vocab()).order)
        target = out / lm_file(len(lm_orders) - 1)
        steps.append(Step(lm_step(len(lm_orders) - 1), (lm_path,), (target,),
                          {"copy": True},
                          lambda lm_path=lm_path, target=target: f"copied a {copy_lm(lm_path, target)}-gram ARPA LM"))

    if s.osm_order is not None:
        steps.append(Step(
            "osm", (corpus_src, corpus_tgt, gdfa), (work / "operations.gz", out / OSM_FILE),
            {"order": s.osm_order, "discount_fallback": s.discount_fallback},
            lambda: train_osm(corpus_src, corpus_tgt, gdfa, work / "operations.gz", out / OSM_FILE, s.osm_order,
                              s.discount_fallback, s.scale.memory, work, progress),
        ))

    if s.word_classes:
        def classes() -> str:
            induced = induce_classes(corpus_tgt, s.word_classes, progress=progress)
            induced.classes.write(out / CLASSES_FILE)
            return (f"{s.word_classes} classes of {len(induced.classes.words):,} target words, objective "
                    f"{induced.objectives[0]:.4g} -> {induced.objectives[-1]:.4g} in {len(induced.moved)} passes")

        steps.append(Step("classes", (corpus_tgt,), (out / CLASSES_FILE,), {"classes": s.word_classes}, classes))

    def config() -> str:
        default_config(lm_orders, s.osm_order is not None).write(out / "moses.ini")
        write_preprocessing(out / "pbmt.toml", preprocessing)
        return "moses.ini (default weights) and pbmt.toml"

    steps.append(Step("config", truecasers + ((s.protected,) if s.protected else ()),
                      (out / "moses.ini", out / "pbmt.toml"),
                      {"lm_orders": lm_orders, "osm": s.osm_order is not None, "preprocess": preprocess}, config))
    return steps


def train(settings: TrainSettings, log: Callable[[str], None] = lambda m: None,
          progress: bool = False) -> list[StepReport]:
    """Train (or bring up to date) the model folder ``settings.out``; returns a
    report per step. ``log`` receives a line per step and sub-stage;
    ``progress`` shows progress bars on standard error. A missing input file is
    an error before anything is written; a run that fails leaves no folder it
    made and left empty."""
    for path in (settings.src, settings.tgt, settings.alignment, settings.alignment_fwd, settings.alignment_rev,
                 *settings.lms):
        if path is not None and not Path(path).exists():
            raise PbmtError(f"{path}: no such file")
    with left_clean_on_failure(settings.out, settings.work_dir):
        lock_folder(settings.out)
        steps = training_steps(settings, log, progress)
        return StepRunner(settings.work_dir / "steps", log).run(steps)
