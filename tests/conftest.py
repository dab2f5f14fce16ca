"""Shared test fixtures: the repository's own data (``data/``: the embedded model and Bible text), a tiny model
for exhaustive tests built from it, and ``../shared/data`` beside the repository for the comparisons with Moses's
outputs and the shared benchmarks (those tests skip without it; README's "Tests" says which)."""

import fcntl
import gzip
import itertools
import os
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from repo_data import DATA, REPO, data_lines
from support import TINY_SOURCES, write_moses_ini

SHARED_DATA = REPO.parent / "shared" / "data" / "bible-es-en"

# the tests of worker processes give them a few sentences: start their clusters whatever the input's size
# (pbmt.base.parallel; tests/test_parallel.py checks the default)
os.environ["PBMT_CLUSTER_MIN_ITEMS"] = "0"

# Hypothesis's deadline and its too-slow health check time the machine, not pbmt: on CI's two busy cores a case
# that draws three lists can pass its deadline. Every property test runs without them.
settings.register_profile("pbmt", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pbmt")


# The test files that take longest on a fresh clone (docs/tests.md), run first: with -n 2 the other worker runs
# the rest meanwhile, instead of one worker running one of them alone at the end.
LONGEST_FIRST = ("test_tutorial.py", "search/test_sparse.py", "model/test_osm.py", "test_writing_a_feature.py",
                 "test_fuzz.py")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """With ``-n N`` (pytest-xdist) and no ``--dist`` given, each test file whole on one worker, handed out in
    this file's order. Set here rather than in pyproject.toml's ``addopts``, so that an environment without
    xdist still runs ``pytest`` (which would reject ``--dist`` as unknown)."""
    if getattr(config.option, "numprocesses", None) and config.option.dist == "no":
        config.option.dist = "loadfile"
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    """``LONGEST_FIRST``'s files first (xdist hands out files in this order, ``pytest_cmdline_main``), the rest
    in pytest's order."""
    tests = Path(__file__).resolve().parent
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.resolve().relative_to(tests).as_posix(), len(rank)))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The share of tests that skipped, by reason (on a clone alone, mostly ``../shared`` missing: README's
    "Tests" says which tests need it and why)."""
    skipped = terminalreporter.stats.get("skipped", [])
    counted = len(skipped) + sum(len(terminalreporter.stats.get(kind, [])) for kind in ("passed", "failed", "error"))
    if not skipped or not counted:
        return
    reasons = Counter(r.longrepr[2].removeprefix("Skipped: ") if isinstance(r.longrepr, tuple) else str(r.longrepr)
                      for r in skipped)
    terminalreporter.write_line(f"skipped: {len(skipped)} of {counted} tests ({100 * len(skipped) / counted:.1f}%), "
                                f"{100 - 100 * len(skipped) / counted:.1f}% ran")
    for reason, n in reasons.most_common():
        terminalreporter.write_line(f"  {n:5d}  {reason}")


@pytest.fixture(scope="session")
def repo_corpus(tmp_path_factory) -> Path:
    """A folder of what the repository alone provides, named as in the shared data: ``data/bible``'s files
    unzipped (``train.es``, ``dev.es``, ``test.en``, ...: plain text; ``dev.tok.es``, ``dev.tok.en``: the shared
    corpus's token form) and ``lm3.arpa.gz``, a trigram Kneser-Ney LM of ``dev.tok.en`` estimated by pbmt
    (equal to lmplz's, ``tests/train/test_lm_estimate.py``)."""
    from pbmt.train.lm_estimate import write_lm

    folder = tmp_path_factory.mktemp("repo-corpus")
    for path in sorted((DATA / "bible").glob("*.gz")):
        (folder / path.stem).write_text("\n".join(data_lines(path.stem)) + "\n", encoding="utf-8")
    write_lm(folder / "dev.tok.en", 3, folder / "lm3.arpa.gz")
    return folder


@pytest.fixture(scope="session")
def feature_folder(request, tmp_path_factory):
    """``feature_folder(name)``: an empty folder at the same path in every run of this clone (pytest's cache,
    ``.pytest_cache/d/NAME``) but for its ``__pycache__``, for a model whose feature module lives outside pbmt.
    What numba compiles for such a module is cached beside it, keyed by the module's path and content
    (``pbmt.model._apart_cache``): at a new path every run, the searches would compile anew every run (about a
    minute). The process that empties the folder holds a lock on it (``NAME.lock`` beside it) until its session
    ends; a second process of this clone (a pytest worker, another run) meanwhile gets a new temporary folder,
    so neither empties the other's. Without pytest's cache (``-p no:cacheprovider``) a new temporary folder."""
    cache = getattr(request.config, "cache", None)
    held: dict[str, Path] = {}

    def folder(name: str) -> Path:
        if cache is None:
            return tmp_path_factory.mktemp(name)
        if name not in held:
            path = cache.mkdir(name)
            lock = open(path.parent / f"{name}.lock", "a")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                return tmp_path_factory.mktemp(name)
            request.addfinalizer(lock.close)
            held[name] = path
        path = held[name]
        for child in path.iterdir():
            if child.name != "__pycache__":
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        return path

    return folder


@pytest.fixture(scope="session")
def bible() -> Path:
    """Folder of the shared Spanish-English Bible data (skips if absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def shared(bible):
    """The shared Moses model (loaded once) and the dev source lines."""
    from pbmt.model.model import TranslationModel

    model = TranslationModel.load(bible / "model" / "moses.ini")
    lines = (bible / "dev.tok.es").read_text(encoding="utf-8").splitlines()
    return model, lines


SOURCE = ["a", "b", "c", "d", "e"]
TARGET = ["the", "lord", "said", "unto", "moses", "and", "house", "of", "israel", "go"]


def _tables(rng):
    """Phrase pairs for every source phrase of length <= 2 and a few of length 3."""
    sources = [[w] for w in SOURCE] + [list(p) for p in itertools.permutations(SOURCE, 2)][::3]
    sources += [["a", "b", "c"], ["c", "d", "e"]]
    pt, lr = [], []
    for src in sources:
        for _ in range(int(rng.integers(1, 4))):
            tgt = list(rng.choice(TARGET, size=int(rng.integers(1, 3))))
            probs = rng.uniform(0.05, 1.0, size=4)
            align = " ".join(f"{i}-{min(i, len(tgt) - 1)}" for i in range(len(src)))
            pt.append(f"{' '.join(src)} ||| {' '.join(tgt)} ||| {' '.join(f'{p:.6f}' for p in probs)} ||| {align} |||")
            lr.append(f"{' '.join(src)} ||| {' '.join(tgt)} ||| "
                      + " ".join(f"{p:.6f}" for p in rng.uniform(0.05, 1.0, size=6)))
    # duplicates of a pair within one source phrase are not allowed in Moses tables
    return sorted(set(pt)), sorted(set(lr))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, repo_corpus):
    rng = np.random.default_rng(7)
    folder = tmp_path_factory.mktemp("tiny-model")
    pt, lr = _tables(rng)
    lr_keys = {" ||| ".join(line.split(" ||| ")[:2]) for line in pt}
    lr = [line for line in lr if " ||| ".join(line.split(" ||| ")[:2]) in lr_keys]
    with gzip.open(folder / "phrase-table.gz", "wt") as f:
        f.write("\n".join(pt) + "\n")
    with gzip.open(folder / "reordering-table.gz", "wt") as f:
        f.write("\n".join(lr) + "\n")
    write_moses_ini(folder, [
        ("UnknownWordPenalty", "1"), ("WordPenalty", "-0.5"), ("PhrasePenalty", "0.2"),
        ("PhraseDictionaryMemory name=TranslationModel0 num-features=4 path=phrase-table.gz input-factor=0 "
         "output-factor=0", "0.2 0.1 0.3 0.1"),
        ("LexicalReordering name=LexicalReordering0 num-features=6 type=wbe-msd-bidirectional-fe-allff "
         "input-factor=0 output-factor=0 path=reordering-table.gz", "0.3 0.2 0.1 0.3 0.2 0.1"),
        ("Distortion", "0.4"), (f"KENLM name=LM0 factor=0 path={repo_corpus / 'lm3.arpa.gz'} order=3", "0.5")], 2)
    return folder


@pytest.fixture(scope="session")
def sparse_model_dir(tiny_model_dir, tmp_path_factory):
    """The tiny model with the boundary family (two classes over some target words, the rest <unk>) and weights."""
    import shutil

    from pbmt.model.model import TranslationModel
    from pbmt.model.sparse import SparseModel, WordClasses

    folder = tmp_path_factory.mktemp("tiny-sparse")
    shutil.copytree(tiny_model_dir, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    model = TranslationModel.load(folder / "moses.ini")
    sparse = SparseModel.new(WordClasses(("the", "lord", "said", "go", "israel"), [0, 1, 1, 0, 1], ("k0", "k1")))
    sparse.with_weights(np.linspace(-0.3, 0.3, sparse.size)).write(folder, model.toml_tables(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_dev(tiny_model_dir, tmp_path_factory):
    """Tiny-model sources with references the model can reach: each sentence's 4th best translation."""
    from pbmt.model.model import TranslationModel
    from pbmt.features.translation import Translator

    folder = tmp_path_factory.mktemp("tiny-dev")
    translator = Translator(TranslationModel.load(tiny_model_dir / "moses.ini"), n_best=4, distinct=True,
                            tokenized=True)
    refs = [translator.translate(i, line).nbest[-1].text for i, line in enumerate(TINY_SOURCES)]
    (folder / "dev.src").write_text("\n".join(TINY_SOURCES) + "\n")
    (folder / "dev.ref").write_text("\n".join(refs) + "\n")
    return folder
