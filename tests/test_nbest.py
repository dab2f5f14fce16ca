import gzip
import io
import itertools

import pytest

from pbmt.base.errors import FormatError
from pbmt.base.nbest import NBestEntry, parse_line, read_nbest, write_nbest


def test_reads_moses_nbest_with_segmentation_and_alignment(bible):
    path = bible / "model" / "dev.moses.nbest100.gz"
    entries = list(itertools.islice(read_nbest(path), 250))
    assert [e.sentence for e in entries[:100]] == [0] * 100 and entries[100].sentence == 1
    first = entries[0]
    assert first.features["LM0"] == (-74.633,) and first.features["TranslationModel0"][3] == -35.5046
    assert first.total == -15.532
    assert first.segmentation[0] == (0, 2, 0, 5) and first.alignment[1] == (1, 4)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        raw = [line.rstrip("\n") for line in itertools.islice(f, 250)]
    for entry, line in zip(entries, raw):
        assert len(entry.text.split()) == sum(d - c for _, _, c, d in entry.segmentation)
        assert parse_line(entry.to_line()) == entry
        assert entry.to_line().split(" ||| ")[:2] == [f.strip() for f in line.split(" ||| ")[:2]]


def test_write_then_read_round_trips(tmp_path):
    entries = [NBestEntry(3, "a b c", {"LM0": (-1.5,), "TM0": (0.25, -2.0)}, -3.125, ((1, 3, 0, 2), (0, 1, 2, 3)),
                          ((0, 2), (1, 0), (2, 1))),
               NBestEntry(4, "d", {"LM0": (-0.5,), "TM0": (0.0, 1.0)}, 1.0)]
    buffer = io.StringIO()
    write_nbest(entries, buffer)
    path = tmp_path / "list.nbest"
    path.write_text(buffer.getvalue())
    assert list(read_nbest(path)) == entries
    assert "1-2=0-1 0=2" in buffer.getvalue()


@pytest.mark.parametrize("line, reason", [
    ("0 ||| a ||| LM0= -1", "at least 4 fields"),
    ("x ||| a ||| LM0= -1 ||| -1", "sentence id"),
    ("0 ||| a ||| -1 LM0= ||| -1", "before any feature name"),
    ("0 ||| a ||| LM0= q ||| -1", "not a finite number"),
    ("0 ||| a ||| LM0= nan ||| -1", "not a finite number"),
    ("0 ||| a ||| LM0= -1 LM0= 2 ||| -1", "appears twice"),
    ("0 ||| a ||| LM0= -1 ||| total", "total score"),
    ("0 ||| a ||| LM0= -1 ||| -1 ||| 0-1", "i-j=k-l"),
    ("0 ||| a ||| LM0= -1 ||| -1 ||| 0=0 ||| 0:0", "alignment point"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, reason):
    path = tmp_path / "bad.nbest"
    path.write_text("0 ||| a ||| LM0= -1 ||| -1\n" + line + "\n")
    with pytest.raises(FormatError) as err:
        list(read_nbest(path))
    assert err.value.line == 2 and reason in str(err.value) and str(path) in str(err.value)
