import gzip

import pytest

from pbmt.errors import FormatError
from pbmt.files import atomic_write, read_lines


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
