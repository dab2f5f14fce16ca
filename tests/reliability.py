"""Shared pieces of the reliability tests: a small model cut from the repository's data, an in-process runner
of ``pbmt`` and the check every fuzz case must pass.

The model is the embedded model (``data/model``) filtered to a few dev sentences (``pbmt filter``), at most four
candidates per source phrase, with a trigram LM estimated by ``pbmt lm`` on the last 300 lines of the dev set's
English side (not the lines of those sentences): real files, small enough that a mutated copy loads in a
fraction of a second, and no ``../shared`` needed. The tests of training corpora (``SHARED``: its training text
and alignment) still need the shared data.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from repo_data import EMBEDDED_MODEL, data_lines
from pbmt.commands.cli import main

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bible-es-en"
# cases per generator are multiplied by this (benchmarks/bench_fuzz.py runs the generators with 10)
SCALE = int(os.environ.get("PBMT_FUZZ_SCALE", "1"))
MODEL_FILES = ("moses.ini", "pbmt.toml", "phrase-table.gz", "reordering-table.gz", "lm.arpa")
CANDIDATES = 4
LM_LINES = 300
N_SENTENCES = 4


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def run(argv: list[str]) -> Result:
    """``pbmt argv`` in this process; its exit code, standard output and standard error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code
    return Result(code, out.getvalue(), err.getvalue())


def build_model(folder: Path, sources: list[str]) -> Path:
    """The small model of the module docstring in ``folder``; returns its moses.ini."""
    work = folder / "work"
    work.mkdir(parents=True)
    (work / "src").write_text("\n".join(sources) + "\n")
    assert run(["filter", "-q", "-f", EMBEDDED_MODEL, "-i", work / "src", "--tokenized",
                "--out", work / "filtered"]).code == 0
    for name in ("phrase-table.gz", "reordering-table.gz"):
        kept, seen = [], {}
        for line in gzip.decompress((work / "filtered" / name).read_bytes()).decode().splitlines():
            source = line.split(" ||| ")[0]
            seen[source] = seen.get(source, 0) + 1
            if seen[source] <= CANDIDATES:
                kept.append(line)
        (folder / name).write_bytes(gzip.compress(("\n".join(kept) + "\n").encode(), mtime=0))
    lines = data_lines("dev.tok.en")[-LM_LINES:]
    (work / "lm.txt").write_text("\n".join(lines) + "\n")
    assert run(["lm", "-q", "-n", "3", work / "lm.txt", folder / "lm.arpa"]).code == 0
    ini = (work / "filtered" / "moses.ini").read_text().splitlines()
    ini = [("KENLM name=LM0 factor=0 path=lm.arpa order=3" if line.startswith("KENLM") else
            " ".join(f"path={Path(t[5:]).name}" if t.startswith("path=") else t for t in line.split()))
           for line in ini]
    (folder / "moses.ini").write_text("\n".join(ini) + "\n")
    (folder / "pbmt.toml").write_text('[preprocess]\ntokenize = false\nlowercase = false\n'
                                      '[search]\nreordering = "distortion"\n')
    shutil.rmtree(work)
    return folder / "moses.ini"


def model_copy(clean: Path, folder: Path, replaced: dict[str, bytes]) -> Path:
    """A model folder whose files are symlinks to the clean model's (so their caches are reused), but for those
    in ``replaced`` (name -> content); returns its moses.ini."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in MODEL_FILES:
        if name in replaced:
            (folder / name).write_bytes(replaced[name])
        else:
            os.symlink(clean / name, folder / name)
    return folder / "moses.ini"


def check(result: Result, clean: dict[str, str], produced: dict[str, str], names: list[str]) -> None:
    """The reliability contract: no traceback; either exit 1 or 2 with one line on standard error naming one of
    ``names`` (the mutated file or option), or exit 0 with every output equal to the clean input's."""
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    if result.code == 0:
        assert produced == clean, f"exit 0 with output other than the clean input's; stderr: {result.err!r}"
        return
    assert result.code in (1, 2), (result.code, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert any(name in lines[0] for name in names), (lines[0], names)


def read_outputs(paths: dict[str, Path]) -> dict[str, str]:
    """The text of each output that exists."""
    return {key: path.read_text() for key, path in paths.items() if path.exists()}


@pytest.fixture(scope="session")
def fuzz(tmp_path_factory):
    """The clean model, its input and every clean output the cases compare with."""
    folder = tmp_path_factory.mktemp("fuzz")
    sources = [line for line in data_lines("dev.tok.es") if 4 < len(line.split()) < 9]
    sources = sources[:N_SENTENCES]
    ini = build_model(folder / "model", sources)
    (folder / "in.txt").write_text("\n".join(sources) + "\n")
    refs = {line: ref for line, ref in zip(data_lines("dev.tok.es"), data_lines("dev.tok.en"))}
    (folder / "refs.txt").write_text("\n".join(refs[s] for s in sources) + "\n")
    outputs = translate_outputs(folder / "clean")
    result = run(translate_args(ini, folder / "in.txt", outputs))
    assert result.code == 0, result.err
    assert run(optimize_args(outputs["nbest"], folder / "refs.txt", ini, folder / "clean" / "tuned.ini")).code == 0
    return {"folder": folder, "model": ini.parent, "input": folder / "in.txt", "refs": folder / "refs.txt",
            "translations": read_outputs(outputs), "nbest": outputs["nbest"],
            "tuned": (folder / "clean" / "tuned.ini").read_text()}


def translate_outputs(folder: Path) -> dict[str, Path]:
    return {"text": folder / "out.txt", "nbest": folder / "nbest.txt", "alignment": folder / "align.txt"}


def translate_args(ini, source, outputs):
    return ["translate", "-q", "--tokenized", "-f", ini, "-i", source, "-o", outputs["text"],
            "--n-best", outputs["nbest"], "--n-best-size", "5", "--alignment", outputs["alignment"]]


def optimize_args(nbest, refs, ini, out):
    return ["optimize", "-q", "--n-best", nbest, "--refs", refs, "-f", ini, "-o", out, "--restarts", "2",
            "--random-directions", "2"]
