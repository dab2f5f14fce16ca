"""Faults and odd output targets: kills at random points and resumption, Ctrl-C, SIGTERM, a full disk, a read-only
folder, symlinks, FIFOs and /dev/stdout as outputs.

A killed ``translate``, ``tune`` or ``train`` resumes to output identical to an uninterrupted run's; a killed
``sample`` leaves its old output untouched and a rerun gives the identical output. These run ``pbmt`` as a
subprocess (a kill needs a process); the rest run in this process.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reliability import SHARED, fuzz, read_outputs, run, translate_args, translate_outputs  # noqa: F401 - a fixture
from repo_data import data_lines

REPO = Path(__file__).resolve().parents[1]
KILL_SENTENCES = 60


def start(argv: list, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "pbmt", *map(str, argv)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def wait_for(condition, process: subprocess.Popen, timeout: float = 900.0) -> bool:
    """Poll ``condition()`` until true; False if the process ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if process.poll() is not None:
            return False
        time.sleep(0.02)
    raise AssertionError("the condition never came true")


def journaled(path: Path, records: int):
    def reached() -> bool:
        with contextlib.suppress(OSError):
            return len(path.read_text().splitlines()) - 1 >= records
        return False
    return reached


@pytest.fixture(scope="module")
def kill_input(fuzz, tmp_path_factory):
    """A longer input (dev sentences of up to 12 words) and its uninterrupted translation."""
    folder = tmp_path_factory.mktemp("kill")
    lines = [line for line in data_lines("dev.tok.es") if len(line.split()) <= 12]
    (folder / "in.txt").write_text("\n".join(lines[:KILL_SENTENCES]) + "\n")
    outputs = translate_outputs(folder / "clean")
    assert run(translate_args(fuzz["model"] / "moses.ini", folder / "in.txt", outputs)).code == 0
    return folder / "in.txt", read_outputs(outputs)


@pytest.mark.parametrize("seed", range(2))
def test_a_killed_translation_resumes_to_the_uninterrupted_output(fuzz, kill_input, tmp_path, seed):
    source, clean = kill_input
    outputs = translate_outputs(tmp_path / "out")
    argv = translate_args(fuzz["model"] / "moses.ini", source, outputs)
    process = start(argv)
    journal = outputs["text"].parent / f".{outputs['text'].name}.pbmt-journal"
    records = random.Random(seed).randrange(1, KILL_SENTENCES // 2)
    killed = wait_for(journaled(journal, records), process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert killed, "the run ended before the kill"
    assert not outputs["text"].exists()  # nothing half-written under the final names
    result = run([*argv[:1], *argv[2:]])  # without -q: it says it resumes
    assert result.code == 0, result.err
    assert "resuming a killed run" in result.err
    assert read_outputs(outputs) == clean
    assert sorted(p.name for p in outputs["text"].parent.iterdir()) == sorted(p.name for p in outputs.values())


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_is_one_line_and_exit_130(fuzz, kill_input, tmp_path, workers):
    source, _ = kill_input
    outputs = translate_outputs(tmp_path / "out")
    # the child gets SIGINT's default disposition, as a terminal's foreground job has it, whatever this process
    # inherited (an ignored SIGINT survives exec: the run would then finish and exit 0)
    process = start([*translate_args(fuzz["model"] / "moses.ini", source, outputs), "--workers", workers],
                    start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    journal = outputs["text"].parent / f".{outputs['text'].name}.pbmt-journal"
    assert wait_for(journaled(journal, 1), process)
    os.killpg(process.pid, signal.SIGINT)  # as the terminal sends it: to every process of the group
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert re.fullmatch(r"pbmt translate: interrupted \(\d+ sentences? written and kept: the same command goes on "
                        r"after them\)", err.strip()), err


def test_sigterm_is_one_line_exit_143_and_the_same_command_finishes_the_output(fuzz, kill_input, tmp_path):
    source, clean = kill_input
    outputs = translate_outputs(tmp_path / "out")
    outputs["text"].parent.mkdir()
    outputs["text"].write_text("old\n")
    argv = translate_args(fuzz["model"] / "moses.ini", source, outputs)
    # SIGTERM's default disposition, as a scheduler's job has it (an ignored one survives exec and is left alone)
    process = start(argv, preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    journal = outputs["text"].parent / f".{outputs['text'].name}.pbmt-journal"
    assert wait_for(journaled(journal, 1), process), "the run ended before SIGTERM"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert re.fullmatch(r"pbmt translate: terminated \(\d+ sentences? written and kept: the same command goes on "
                        r"after them\)", err.strip()), err
    assert outputs["text"].read_text() == "old\n"
    assert not outputs["nbest"].exists()
    result = run(argv)
    assert result.code == 0, result.err
    assert read_outputs(outputs) == clean
    assert sorted(p.name for p in outputs["text"].parent.iterdir()) == sorted(p.name for p in outputs.values())


def test_a_killed_tuning_run_resumes_to_the_uninterrupted_weights(fuzz, tmp_path):
    argv = ["tune", "-q", "-f", fuzz["model"] / "moses.ini", "--src", fuzz["input"], "--refs", fuzz["refs"],
            "--n-best-size", "10", "--restarts", "2", "--random-directions", "2", "--iterations", "3"]
    assert run([*argv, "--out", tmp_path / "straight"]).code == 0
    process = start([*argv, "--out", tmp_path / "killed"])
    checkpoint = tmp_path / "killed" / "checkpoint.npz"
    killed = wait_for(checkpoint.exists, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    result = run([*argv, "--out", tmp_path / "killed", "--resume"])
    assert result.code == 0, result.err
    assert (tmp_path / "killed" / "moses.ini").read_text() == (tmp_path / "straight" / "moses.ini").read_text()
    assert killed or process.returncode == 0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, bible):
    folder = tmp_path_factory.mktemp("train-corpus")
    for side in ("es", "en", "align.gdfa"):
        name = f"train.tok.{side}" if len(side) == 2 else f"train.{side}"
        lines = (SHARED / name).read_text().splitlines()[:100]
        (folder / f"train.{side}").write_text("\n".join(lines) + "\n")
    return folder


MODEL = ("moses.ini", "pbmt.toml", "phrase-table.gz", "reordering-table.gz", "lm.arpa.gz")


def test_a_killed_training_run_resumes_to_the_uninterrupted_model(corpus, tmp_path):
    # a given alignment: eflomal has no seed, so two of its runs differ (pbmt/train/align.py)
    argv = ["train", "-q", "--tokenized", "--src", corpus / "train.es", "--tgt", corpus / "train.en",
            "--discount-fallback",
            "--alignment", corpus / "train.align.gdfa"]
    assert run([*argv, "--out", tmp_path / "straight"]).code == 0
    process = start([*argv, "--out", tmp_path / "killed"])
    steps = tmp_path / "killed" / "work" / "steps"
    wait_for(lambda: steps.is_dir() and len(list(steps.iterdir())) >= random.Random(3).randrange(1, 3), process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    result = run([*argv, "--out", tmp_path / "killed"])
    assert result.code == 0, result.err
    for name in MODEL:
        assert (tmp_path / "killed" / name).read_bytes() == (tmp_path / "straight" / name).read_bytes(), name
    leftovers = [p for p in (tmp_path / "killed").rglob(".*") if ".pbmt-" in p.name and "cache" not in str(p)]
    assert leftovers == []


def test_a_killed_sampler_leaves_the_old_output_and_a_rerun_is_identical(fuzz, kill_input, tmp_path):
    source, _ = kill_input
    out = tmp_path / "sampled.txt"
    argv = ["sample", "-q", "--tokenized", "-f", fuzz["model"] / "moses.ini", "-i", source, "-o", out,
            "--steps-per-sentence", "200", "--seed", "3"]
    assert run(argv).code == 0
    clean = out.read_text()
    out.write_text("old\n")
    process = start(argv)
    time.sleep(random.Random(5).uniform(1.0, 3.0))
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert out.read_text() in ("old\n", clean)  # never half-written
    assert run(argv).code == 0
    assert out.read_text() == clean
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sampled.txt"]


def test_a_symlinked_output_is_followed(fuzz, tmp_path):
    outputs = translate_outputs(tmp_path)
    real = tmp_path / "elsewhere" / "real.txt"
    real.parent.mkdir()
    real.write_text("old\n")
    outputs["text"].symlink_to(real)
    assert run(translate_args(fuzz["model"] / "moses.ini", fuzz["input"], outputs)).code == 0
    assert outputs["text"].is_symlink() and real.read_text() == fuzz["translations"]["text"]


def test_a_fifo_and_dev_stdout_are_written_in_place(fuzz, tmp_path, capfd):
    outputs = translate_outputs(tmp_path)
    os.mkfifo(outputs["nbest"])
    received = []
    reader = threading.Thread(target=lambda: received.append(open(outputs["nbest"]).read()))
    reader.start()
    outputs["text"] = Path("/dev/stdout")
    result = run(translate_args(fuzz["model"] / "moses.ini", fuzz["input"], outputs))
    reader.join(30)
    assert result.code == 0, result.err
    assert received == [fuzz["translations"]["nbest"]]
    assert capfd.readouterr().out == fuzz["translations"]["text"]
    assert stat.S_ISFIFO(os.stat(outputs["nbest"]).st_mode)


@contextlib.contextmanager
def tmpfs(folder: Path, options: str):
    """A small tmpfs mounted on ``folder`` (skips the test where this process may not mount one)."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip() or 'mount failed'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_full_disk_is_one_line_and_the_old_output_stays(fuzz, tmp_path):
    with tmpfs(tmp_path / "disk", "size=64k") as disk:
        outputs = translate_outputs(disk)
        outputs["text"].write_text("old\n")
        filled = 0
        with contextlib.suppress(OSError), open(disk / "filler2", "wb") as f:
            while filled < 64 * 1024:  # leave less room than the n-best list needs
                f.write(b"x" * 512)
                f.flush()
                filled += 512
                if os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize < 12 * 1024:
                    break
        result = run(translate_args(fuzz["model"] / "moses.ini", fuzz["input"], outputs))
        assert result.code == 1 and "Traceback" not in result.err, result.err
        assert len(result.err.strip().splitlines()) == 1 and "no space left" in result.err.lower(), result.err
        assert outputs["text"].read_text() == "old\n"


def test_a_read_only_folder_is_one_line(fuzz, tmp_path):
    if os.geteuid() == 0:
        context = tmpfs(tmp_path / "ro", "ro,size=64k")
    else:
        (tmp_path / "ro").mkdir()
        os.chmod(tmp_path / "ro", 0o555)
        context = contextlib.nullcontext(tmp_path / "ro")
    with context as folder:
        result = run(translate_args(fuzz["model"] / "moses.ini", fuzz["input"], translate_outputs(folder)))
    assert result.code == 1 and "Traceback" not in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1 and str(folder) in result.err, result.err
