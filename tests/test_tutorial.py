"""docs/tutorial.md's shell commands, run as written on a small slice (its size variables set low)."""

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs"))
from generated import tutorial_blocks  # noqa: E402  (docs/generated.py)

SMALL = {"TRAIN": "400", "DEV": "4", "TEST": "4", "ITERATIONS": "2", "EPOCHS": "1", "STEPS": "200"}
PNG = b"\x89PNG\r\n\x1a\n"


def tutorial_script() -> str:
    """The tutorial's ```bash blocks, in order, as one script."""
    blocks = tutorial_blocks()
    assert len(blocks) >= 8, "docs/tutorial.md lost its ```bash blocks"
    return "\n".join(block.code for block in blocks)


def test_the_settings_block_declares_every_size_the_test_lowers():
    script = tutorial_script()
    for name in [*SMALL, "WORK"]:
        assert re.search(rf"^{name}=\$\{{{name}:-[^}}]+\}}", script, re.M), f"no overridable {name}= in the tutorial"


def test_the_tutorial_runs_as_written(tmp_path):
    """Every command of the tutorial, on 400 training pairs and 4 dev and test verses."""
    bin_dir = tmp_path / "bin"  # `pbmt` runs this interpreter, with this checkout first on its path
    bin_dir.mkdir()
    pbmt = bin_dir / "pbmt"
    pbmt.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pbmt "$@"\n')
    pbmt.chmod(pbmt.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "work"
    env = {**os.environ, **SMALL, "WORK": str(work), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(["bash", "-eu", "-c", tutorial_script()], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"the tutorial failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    assert len((work / "train.es").read_text(encoding="utf-8").splitlines()) == 400
    for name in ("moses.ini", "pbmt.toml", "phrase-table.gz", "reordering-table.gz", "lm.arpa.gz"):
        assert (work / "model" / name).is_file()
    for run in ("untuned", "mert", "pro", "samplerank"):
        assert len((work / f"test.{run}.en").read_text(encoding="utf-8").splitlines()) == 4
        assert f"{run}: BLEU = " in done.stdout
    for run in ("mert", "pro", "samplerank"):
        assert (work / run / "moses.ini").is_file() and (work / run / "log.tsv").is_file()
    for figure in ("tuning.png", "mert-weights.png", "pro-weights.png", "trace.png", "mert/dev-bleu.png"):
        assert (work / figure).read_bytes()[:8] == PNG, figure
    assert "<html" in (work / "explain.html").read_text(encoding="utf-8").lower()
    assert (work / "search.dot").read_text(encoding="utf-8").lstrip().startswith("digraph")
    sentences = min(5, int(SMALL["TEST"]))
    assert len((work / "trace.tsv").read_text(encoding="utf-8").splitlines()) == 1 + sentences * (200 // 100 + 1)
