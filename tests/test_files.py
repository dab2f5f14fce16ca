import errno
import gzip
import os
import re
import stat
import subprocess
import sys
import threading

import pytest

from pbmt.base.errors import FormatError, PbmtError, UsageError
from pbmt.base.files import Outputs, atomic_write, parse_int, read_lines
from pbmt.base.journal import Journal


def test_invalid_utf8_is_reported_on_its_own_line_far_into_the_file(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(2999)) + b"bad \xff byte\nlast\n")
    with pytest.raises(FormatError) as err:
        list(read_lines(path))
    assert err.value.line == 3000 and str(path) in str(err.value)


def test_gzip_and_plain_read_alike(tmp_path):
    with gzip.open(tmp_path / "a.gz", "wt") as f:
        f.write("uno\ndos\r\n")
    (tmp_path / "a.txt").write_text("uno\ndos\r\n")
    assert list(read_lines(tmp_path / "a.gz")) == list(read_lines(tmp_path / "a.txt")) == [(1, "uno"), (2, "dos")]


def test_atomic_write_leaves_old_file_when_body_fails(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(path) as f:
            f.write("half")
            raise RuntimeError("boom")
    assert path.read_text() == "old" and list(tmp_path.iterdir()) == [path]


def test_atomic_write_compresses_gz_paths_reproducibly(tmp_path):
    for name, mode, text in (("t.gz", "w", "uno\ndós\n"), ("b.gz", "wb", "uno\ndós\n".encode())):
        with atomic_write(tmp_path / name, mode) as f:
            f.write(text)
        assert gzip.decompress((tmp_path / name).read_bytes()) == "uno\ndós\n".encode()
        assert list(read_lines(tmp_path / name)) == [(1, "uno"), (2, "dós")]
    first = (tmp_path / "t.gz").read_bytes()
    with atomic_write(tmp_path / "t.gz") as f:
        f.write("uno\ndós\n")
    assert (tmp_path / "t.gz").read_bytes() == first  # no timestamp in the header
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.gz", "t.gz"]


def test_a_symlink_is_followed_not_replaced(tmp_path):
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    with atomic_write(tmp_path / "link.txt") as f:
        f.write("new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo).read()))
    reader.start()
    with atomic_write(fifo) as f:
        f.write("through the pipe\n")
    reader.join(10)
    assert received == ["through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_dev_stdout_is_written_in_place_and_stays_a_link(capfd):
    was_link = os.path.islink("/dev/stdout")
    with atomic_write("/dev/stdout") as f:
        f.write("to the terminal\n")
    assert "to the terminal\n" in capfd.readouterr().out
    assert os.path.islink("/dev/stdout") == was_link


def test_a_directory_is_an_error_naming_it(tmp_path):
    with pytest.raises(PbmtError, match="is a directory"):
        with atomic_write(tmp_path) as f:
            f.write("x")


def test_outputs_of_one_run_are_renamed_together_or_not_at_all(tmp_path):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("old")
    with pytest.raises(RuntimeError):
        with Outputs() as outputs:
            outputs.open(tmp_path / "a.txt").write("new a")
            outputs.open(tmp_path / "b.txt").write("new b")
            raise RuntimeError("the second output failed")
    assert [(tmp_path / n).read_text() for n in ("a.txt", "b.txt")] == ["old", "old"]
    with Outputs() as outputs:
        outputs.open(tmp_path / "a.txt").write("new a")
        outputs.open(tmp_path / "b.txt").write("new b")
    assert [(tmp_path / n).read_text() for n in ("a.txt", "b.txt")] == ["new a", "new b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_a_failed_run_leaves_no_folder_it_made_for_its_outputs_and_keeps_the_others(tmp_path):
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError):
        with Outputs() as outputs:
            outputs.open(tmp_path / "new" / "deeper" / "a.txt").write("a")
            outputs.claim([tmp_path / "other" / "b.txt"])
            outputs.open(tmp_path / "kept" / "c.txt").write("c")
            (tmp_path / "other" / "notes.txt").write_text("written meanwhile by someone else")
            raise RuntimeError("failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "other"]
    assert [p.name for p in (tmp_path / "other").iterdir()] == ["notes.txt"] and not any((tmp_path / "kept").iterdir())
    with Outputs() as outputs:
        outputs.open(tmp_path / "new" / "a.txt").write("a")
    assert (tmp_path / "new" / "a.txt").read_text() == "a"


def test_temporary_files_of_dead_runs_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = tmp_path / f".out.txt.pbmt-{dead}-abc.tmp"
    live = tmp_path / f".out.txt.pbmt-{os.getppid()}-abc.tmp"
    stale.write_text("left by a killed run")
    live.write_text("another run writing now")
    with atomic_write(tmp_path / "out.txt") as f:
        f.write("done")
    assert not stale.exists() and live.exists()


def test_a_second_run_writing_the_same_journaled_outputs_stops_instead_of_mixing_them(tmp_path):
    """Two runs into one output at the same time appended to the same partial file (2,012 garbled lines where
    1,006 were due); the second now stops with a one-line error, the first is untouched, and once it is done
    the output is free again."""
    paths = [tmp_path / "out.txt"]
    with Journal(paths, lambda: "run-1") as first:
        first.write(["a\n"])
        with pytest.raises(PbmtError, match=r"out.txt: another pbmt run is writing it now"):
            Journal(paths, lambda: "run-1")
        first.write(["b\n"])
    assert paths[0].read_text() == "a\nb\n"
    with Journal(paths, lambda: "run-2") as again:
        again.write(["c\n"])
    assert paths[0].read_text() == "c\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_journaled_output_resumes_after_the_last_record_and_only_on_the_same_fingerprint(tmp_path):
    paths = [tmp_path / "out.txt", tmp_path / "nbest.txt"]
    records = [[f"line {i}\n", f"{i} ||| a\n{i} ||| b\n"] for i in range(6)]
    with pytest.raises(KeyboardInterrupt) as interrupted:
        with Journal(paths, lambda: "run-1", unit="sentence") as journal:
            for record in records[:4]:
                journal.write(record)
            raise KeyboardInterrupt
    assert interrupted.value.__notes__ == ["4 sentences written and kept: the same command goes on after them"]
    assert not any(p.exists() for p in paths)
    with open(tmp_path / ".out.txt.pbmt-partial", "a") as f:
        f.write("line 4 half-writt")  # the kill came in the middle of a record
    with Journal(paths, lambda: "run-1") as journal:
        assert journal.done == 4
        for record in records[4:]:
            journal.write(record)
    assert [p.read_text() for p in paths] == ["".join(r[k] for r in records) for k in range(2)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nbest.txt", "out.txt"]
    with pytest.raises(KeyboardInterrupt):
        with Journal(paths, lambda: "run-1") as journal:
            journal.write(records[0])
            raise KeyboardInterrupt
    with Journal(paths, lambda: "run-2") as journal:
        assert journal.done == 0
        journal.write(records[5])
    assert paths[0].read_text() == records[5][0]


def test_a_full_disk_names_the_output_and_counts_only_the_records_a_resume_keeps(tmp_path):
    """A write failing with ENOSPC (here the n-best list's flush on the fourth record) names that output, and the
    note counts the three records journaled, which the resumed run then finds (it said four: the failed one too)."""
    paths = [tmp_path / "out.txt", tmp_path / "nbest.txt"]
    records = [[f"line {i}\n", f"{i} ||| a\n"] for i in range(6)]

    class FullAfter:
        def __init__(self, handle, flushes):
            self.handle, self.flushes = handle, flushes

        def write(self, text):
            return self.handle.write(text)

        def flush(self):
            self.flushes -= 1
            if self.flushes < 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.handle.flush()

        def __getattr__(self, name):
            return getattr(self.handle, name)

    with pytest.raises(OSError) as full:
        with Journal(paths, lambda: "run-1", unit="sentence") as journal:
            journal.handles[1] = FullAfter(journal.handles[1], 3)
            for record in records:
                journal.write(record)
    assert full.value.filename == str(paths[1])
    assert full.value.__notes__ == ["3 sentences written and kept: the same command goes on after them"]
    with Journal(paths, lambda: "run-1") as journal:
        assert journal.done == 3
        for record in records[3:]:
            journal.write(record)
    assert [p.read_text() for p in paths] == ["".join(r[k] for r in records) for k in range(2)]


def test_a_bom_is_not_part_of_the_first_word(tmp_path):
    (tmp_path / "bom.txt").write_bytes("\ufeffuno dos\n".encode())
    assert list(read_lines(tmp_path / "bom.txt")) == [(1, "uno dos")]


@pytest.mark.parametrize("text", ["\u0663", "1_0", " ", "", "+", "1.0"])
def test_only_ascii_digits_are_integers(text):
    with pytest.raises(ValueError):
        parse_int(text)


def test_a_name_of_255_bytes_has_its_hidden_files_beside_it(tmp_path):
    """pbmt's temporary, partial, journal and lock names carry the output's name: a 255-byte name overflowed
    them ('File name too long'); they are cut to the file system's limit, ended by a digest of the whole."""
    from pbmt.base.files import hidden_name, temporary_name
    for name in ("é" * 127 + "x", "a" * 255, "a" * 254 + "b"):
        assert len(name.encode()) == 255
        for suffix in ("pbmt-partial", "pbmt-journal", "pbmt-lock"):
            assert len(hidden_name(name, suffix).encode()) <= 255
        assert len(temporary_name(name).encode()) + 8 + 4 <= 255  # mkstemp's letters and .tmp
        paths = [tmp_path / name]
        with Journal(paths, lambda: "run") as journal:
            journal.write(["done\n"])
        assert paths[0].read_text() == "done\n"
    assert hidden_name("a" * 254 + "b", "x") != hidden_name("a" * 255, "x")
    assert sorted(len(p.name.encode()) for p in tmp_path.iterdir()) == [255, 255, 255]


def test_one_file_named_twice_by_a_hard_link_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "out.txt").write_text("old")
    os.link(tmp_path / "out.txt", tmp_path / "same.txt")
    with pytest.raises(PbmtError, match="same.txt: named twice as an output of this run"):
        with Outputs() as outputs:
            outputs.claim([tmp_path / "out.txt", tmp_path / "same.txt"])
    assert (tmp_path / "out.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "same.txt"]


def test_an_output_that_is_an_input_of_the_run_is_refused_by_any_name_before_anything_is_written(tmp_path):
    (tmp_path / "in.txt").write_text("the source\n")
    (tmp_path / "link").symlink_to("in.txt")
    os.link(tmp_path / "in.txt", tmp_path / "hard")
    for name in ("in.txt", "link", "hard", "sub/../in.txt"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(UsageError, match=f"^{re.escape(str(tmp_path / name))}: is an input of this run too"):
            with Outputs([tmp_path / "in.txt", None, "-"]) as outputs:
                outputs.open(tmp_path / name).write("a translation\n")
    with pytest.raises(UsageError, match=r"in.txt: is an input of this run too: writing it would replace"):
        Journal([tmp_path / "out.txt", tmp_path / "in.txt"], lambda: "run", inputs=[tmp_path / "in.txt"])
    assert (tmp_path / "in.txt").read_text() == "the source\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard", "in.txt", "link", "sub"]
    with Outputs([tmp_path / "in.txt"]) as outputs:  # a file that is no input is written as before
        outputs.open(tmp_path / "out.txt").write("a translation\n")
    assert (tmp_path / "out.txt").read_text() == "a translation\n"


def test_a_run_folder_is_locked_once_per_process_until_released(tmp_path):
    from pbmt.base.files import lock_folder, release_folders
    lock_folder(tmp_path / "run")
    lock_folder(tmp_path / "run")  # this process holds it already
    other = subprocess.run([sys.executable, "-c", "import sys; from pbmt.base.files import lock_folder; "
                            "lock_folder(sys.argv[1])", str(tmp_path / "run")], capture_output=True, text=True)
    assert "another pbmt run is writing it now" in other.stderr
    release_folders()
    assert list((tmp_path / "run").iterdir()) == []
    again = subprocess.run([sys.executable, "-c", "import sys; from pbmt.base.files import lock_folder; "
                            "lock_folder(sys.argv[1])", str(tmp_path / "run")], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr


def test_an_interrupted_run_into_a_gzip_output_says_it_keeps_nothing_to_go_on_from(tmp_path):
    """A .gz output is written whole when the run ends (no journal): Ctrl-C said only 'interrupted', as if the
    same command would go on after the sentences done, as it does for plain files."""
    with pytest.raises(KeyboardInterrupt) as interrupted:
        with Journal([tmp_path / "out.txt.gz"], lambda: "run", unit="sentence") as journal:
            journal.write(["one\n"])
            journal.write(["two\n"])
            raise KeyboardInterrupt
    assert interrupted.value.__notes__ == ["2 sentences done, none kept to go on from: a run resumes only into plain "
                                           "files, not .gz ones or standard output"]
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(KeyboardInterrupt) as interrupted:
        with Journal([tmp_path / "out.txt.gz"], lambda: "run", unit="sentence"):
            raise KeyboardInterrupt
    assert not getattr(interrupted.value, "__notes__", None)


def test_standard_output_by_another_name_beside_dash_is_refused_and_the_null_device_is_not(tmp_path, monkeypatch):
    """'/dev/stdout' or '/proc/self/fd/N' is standard output as '-' is: two outputs there would interleave their
    lines; the null device twice is two outputs discarded, and another file is another output."""
    out = open(tmp_path / "stdout", "w")
    monkeypatch.setattr("sys.stdout", out)
    alias = f"/proc/self/fd/{out.fileno()}"
    for first, second in (("-", alias), (alias, "-"), (alias, alias)):
        with Outputs() as outputs:
            outputs.open(first)
            with pytest.raises(UsageError, match=f"^{re.escape(second)}: standard output named twice"):
                outputs.open(second)
    with Outputs() as outputs:
        for path in (alias, os.devnull, os.devnull, tmp_path / "other"):
            outputs.open(path).write("kept\n")
    out.close()
    assert (tmp_path / "stdout").read_text() == "kept\n" and (tmp_path / "other").read_text() == "kept\n"


def test_translate_into_a_pipe_refuses_dev_stdout_beside_its_default_output(tiny_model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("a b c\n")
    common = [sys.executable, "-m", "pbmt", "translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src)]
    for outputs in (["--n-best", "/dev/stdout"], ["-o", "/dev/stdout", "--alignment", "/dev/stdout"]):
        run = subprocess.run(common + outputs, capture_output=True, text=True)
        assert (run.returncode, run.stdout) == (2, "")
        assert run.stderr == ("pbmt translate: error: /dev/stdout: standard output named twice as an output of this "
                              "run; give each output but one its own file\n")
    run = subprocess.run(common + ["-o", "/dev/stdout", "--n-best", "/dev/null"], capture_output=True, text=True)
    assert run.returncode == 0 and len(run.stdout.splitlines()) == 1
