import gzip
import hashlib
import io
import itertools
import subprocess
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from support import TINY_SOURCES
from pbmt.base._nbest_kernels import text_keys
from pbmt.base.errors import FormatError
from pbmt.base.nbest import NBestEntry, parse_line, read_nbest, write_nbest

EXTRACTOR = Path(__file__).resolve().parents[2] / "shared" / "tools" / "moses" / "bin" / "extractor"


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
    ("0 ||| a ||| LM0=-1 ||| -1", "value 'LM0=-1' before any feature name (a name ends in '=' and its values follow it "
                                   "after a space: 'LM0= -1')"),
    ("0 ||| a ||| d: 0 lm: -7.5 w: -1 tm: -1 -2 ||| -1", "feature label 'd:' is of Moses's old n-best format"),
    ("0 ||| a ||| LM0= -1 tm: -1 ||| -1", "feature label 'tm:' is of Moses's old n-best format"),
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


def test_sparse_features_follow_the_dense_ones_and_round_trip_byte_exact(tmp_path):
    entries = [NBestEntry(0, "a b", {"LM0": (-1.5,), "TM0": (0.25, -2.0)}, -3.125, ((0, 1, 0, 2),), ((0, 0),),
                          (("pb_c1_c2", 2.0), ("pb_<s>_c1", 1.0))),
               NBestEntry(0, "a", {"LM0": (-2.0,), "TM0": (0.5, -1.0)}, -4.0, sparse=(("pb_c3_</s>", 0.125),)),
               NBestEntry(1, "c", {"LM0": (-0.5,), "TM0": (0.0, 1.0)}, 1.0)]
    assert entries[0].to_line() == ("0 ||| a b ||| LM0= -1.5 TM0= 0.25 -2 pb_c1_c2= 2 pb_<s>_c1= 1 ||| -3.125 ||| "
                                    "0=0-1 ||| 0-0")
    assert entries[2].to_line() == "1 ||| c ||| LM0= -0.5 TM0= 0 1 ||| 1"  # a dense entry as before
    buffer = io.StringIO()
    write_nbest(entries, buffer)
    path = tmp_path / "list.nbest"
    path.write_bytes(buffer.getvalue().encode("utf-8"))
    back = list(read_nbest(path))
    assert back == entries
    again = io.StringIO()
    write_nbest(back, again)
    assert again.getvalue().encode("utf-8") == path.read_bytes()


@pytest.fixture(scope="module")
def sparse_nbest(sparse_model_dir, tmp_path_factory):
    from pbmt.commands.cli import main

    folder = tmp_path_factory.mktemp("sparse-nbest")
    (folder / "src").write_text("\n".join(TINY_SOURCES) + "\n")
    assert main(["translate", "-q", "-f", str(sparse_model_dir / "moses.ini"), "--tokenized", "-i",
                 str(folder / "src"), "-o", str(folder / "out"), "--n-best", str(folder / "nbest"),
                 "--n-best-size", "20"]) == 0
    return folder


def test_translate_writes_the_boundary_features_as_sparse_features(sparse_model_dir, sparse_nbest):
    """Each entry's sparse features are its derivation's boundary features counted from scratch; the list
    round-trips byte-exact."""
    from pbmt.model.model import TranslationModel
    from pbmt.search.derivation import model_score, sparse_features
    from pbmt.search.options import TranslationOptions
    from pbmt.search.output import derivation_from_entry

    model = TranslationModel.load(sparse_model_dir / "moses.ini")
    entries = list(read_nbest(sparse_nbest / "nbest"))
    assert len({e.sentence for e in entries}) == len(TINY_SOURCES) and all(e.sparse for e in entries)
    names = model.sparse.names()
    for entry in entries:
        options = TranslationOptions.build(model, model.vocab.ids(TINY_SOURCES[entry.sentence].split()))
        derivation = derivation_from_entry(entry, options, model)
        counts = sparse_features(derivation, options, model)
        assert entry.sparse == tuple((names[i], counts[i]) for i in np.flatnonzero(counts))
        assert entry.total == pytest.approx(model_score(derivation, options, model), abs=1e-4)
    buffer = io.StringIO()
    write_nbest(entries, buffer)
    assert buffer.getvalue().encode("utf-8") == (sparse_nbest / "nbest").read_bytes()


@pytest.fixture(scope="module")
def block_nbest(tiny_model_dir, tmp_path_factory):
    """The tiny model with the block family's phrase-pair, word-pair and length kinds in its n-best lists (a few
    weights set), and its 20-best list of the tiny sources."""
    import shutil

    from pbmt.commands.cli import main
    from pbmt.model.block_features import BlockWeights
    from pbmt.model.model import TranslationModel
    from pbmt.model.sparse import SparseModel

    folder = tmp_path_factory.mktemp("tiny-block")
    shutil.copytree(tiny_model_dir, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    tables = TranslationModel.load(folder / "moses.ini").toml_tables(folder)
    blocks = BlockWeights(["w:a|go", "w:b|the", "len:lord|1", "blk:c|house"], np.array([0.5, -0.25, 0.3, -0.4]))
    SparseModel(None, np.zeros(0), blocks, ("block", "word", "length")).write(folder, tables)
    (folder / "src").write_text("\n".join(TINY_SOURCES) + "\n")
    assert main(["translate", "-q", "-f", str(folder / "moses.ini"), "--tokenized", "-i", str(folder / "src"),
                 "-o", str(folder / "out"), "--n-best", str(folder / "nbest"), "--n-best-size", "20"]) == 0
    return folder


def test_translate_writes_the_block_familys_kinds_the_model_lists(block_nbest):
    """Phrase-pair indicators, word pairs and lengths (not orientations or bigrams) as Block_<name>, each the
    count of its derivation's blocks; the totals include their weights."""
    from pbmt.model.block_features import sequence_names
    from pbmt.model.model import TranslationModel
    from pbmt.model.sparse import weight_name
    from pbmt.search.derivation import derivation_blocks, model_score
    from pbmt.search.options import TranslationOptions
    from pbmt.search.output import derivation_from_entry

    model = TranslationModel.load(block_nbest / "moses.ini")
    assert model.sparse.block_kinds == ("block", "word", "length")
    entries = list(read_nbest(block_nbest / "nbest"))
    for entry in entries:
        assert all(name.startswith("Block_") for name, _ in entry.sparse)
        options = TranslationOptions.build(model, model.vocab.ids(TINY_SOURCES[entry.sentence].split()))
        derivation = derivation_from_entry(entry, options, model)
        expected = {n: c for n, c in sequence_names(derivation_blocks(derivation, options, options.vocab)).items()
                    if n.startswith(("blk:", "w:", "len:"))}
        assert {weight_name(n): v for n, v in entry.sparse} == expected
        assert entry.total == pytest.approx(model_score(derivation, options, model), abs=1e-4)
    assert any(name == "Block_w:a|go" for e in entries for name, _ in e.sparse)


def test_optimize_writes_block_weights_under_their_weight_file_names(block_nbest, tmp_path):
    from pbmt.commands.cli import main
    from pbmt.model.sparse import SparseWeights

    refs = tmp_path / "refs"
    refs.write_text("\n".join(["go the lord"] * len(TINY_SOURCES)) + "\n")
    assert main(["optimize", "-q", "--n-best", str(block_nbest / "nbest"), "--refs", str(refs), "--algorithm", "apro",
                 "-f", str(block_nbest / "moses.ini"), "-o", str(tmp_path / "tuned.ini"), "--sparse-weights",
                 str(tmp_path / "sw")]) == 0
    weights = SparseWeights.read(tmp_path / "sw")
    assert weights.names and all(n.startswith(("blk:", "w:", "len:")) for n in weights.names)


@pytest.mark.skipif(not EXTRACTOR.exists(), reason=f"Moses's extractor not found at {EXTRACTOR}")
@pytest.mark.parametrize("family", ["boundary", "block"])
def test_moses_extractor_reads_the_sparse_features(family, request, tmp_path):
    """Moses's extractor (as mert-moses.pl runs it) gives every entry the dense values and the sparse name=value
    pairs pbmt reads (in its own order)."""
    folder = request.getfixturevalue("sparse_nbest" if family == "boundary" else "block_nbest")
    refs = tmp_path / "refs"
    refs.write_text("\n".join(["go the lord"] * len(TINY_SOURCES)) + "\n")
    subprocess.run([str(EXTRACTOR), "-r", str(refs), "-n", str(folder / "nbest"), "-S", str(tmp_path / "scores"),
                    "-F", str(tmp_path / "features"), "--allow-duplicates"], check=True, capture_output=True,
                   cwd=tmp_path)
    rows = [line.split() for line in (tmp_path / "features").read_text().splitlines()
            if not line.startswith("FEATURES_TXT_")]
    entries = list(read_nbest(folder / "nbest"))
    assert len(rows) == len(entries)
    for row, entry in zip(rows, entries):
        dense = [float(v) for v in row if "=" not in v]
        assert dense == pytest.approx([v for vs in entry.features.values() for v in vs], abs=1e-9)
        assert sorted(tuple(v.rsplit("=", 1)) for v in row if "=" in v) == sorted((n, f"{x:g}") for n, x in entry.sparse)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600), st.binary(max_size=3))
@example(b"", b"")
@example(b"x" * 128, b"")
@example(b"y" * 129, b"z")
@example(b"w" * 256, b"")
def test_the_kernels_blake2b_is_hashlibs(data, around):
    """The pool's dedup keys are hashed in a kernel: RFC 7693's BLAKE2b with 8-byte digests, as hashlib has it
    (block boundaries at 128 bytes included), of a slice of a longer buffer."""
    buf = np.frombuffer(around + data + around, np.uint8)
    spans = np.array([[len(around), len(around) + len(data)]], dtype=np.int64)
    assert int(text_keys(buf, spans)[0]) == int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _g6(values):
    """``write_g6`` of each value: (its text, or None where it leaves the value to Python)."""
    from pbmt.base.byte_text import G6_MAX_BYTES, write_g6

    out = []
    for x in values:
        buf = np.full(G6_MAX_BYTES + 4, 120, np.uint8)
        end, written = write_g6(buf, 2, x)
        assert (buf[:2] == 120).all() and (buf[end:] == 120).all() if written else end == 2
        out.append(buf[2:end].tobytes().decode("ascii") if written else None)
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.floats(-1e4, 1e4), max_size=50))
@example([0.0, -0.0, 1e-05, 1e-4, 9.999995e-5, 123456.0, 999999.4, 999999.6, 1e16, -1e300, 1.7976931348623157e308,
          5e-324, float("nan"), float("-inf"), -12.0, -74.633, 2.5e-6, 0.1 + 0.2, 1234565.0, 0.0001234565])
def test_n_best_numbers_are_written_as_percent_6g_writes_them(values):
    """N-best lines are written by a kernel: every value it writes is Python's ``%.6g`` to the byte, and it
    leaves to Python only a value beyond 1e+-290 or whose seventh significant digit is a half or close to one
    (rounding to even on the exact binary value)."""
    for x, text in zip(values, _g6(values)):
        if text is not None:
            assert text == "%.6g" % x
        else:
            assert not 1e-290 <= abs(x) <= 1e290 or abs(_seventh_digit_and_on(x) - Decimal("0.5")) < Decimal("2e-6")


def _seventh_digit_and_on(x: float) -> Decimal:
    """The exact binary value of ``x`` past its sixth significant digit, as a fraction of that digit's unit."""
    with localcontext() as context:
        context.prec = 1200
        exact = abs(Decimal(x))
        return exact.scaleb(5 - exact.adjusted()) % 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1e-290, 1e290) | st.floats(-1e290, -1e-290), min_size=1, max_size=20))
def test_a_value_of_six_significant_digits_is_always_written_by_the_kernel(values):
    """Feature scores come rounded from Moses's tables and LMs: no value of six digits is left to Python."""
    rounded = [float("%.6g" % x) for x in values]
    assert _g6(rounded) == ["%.6g" % x for x in rounded]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2 ** 63 + 1, 2 ** 63 - 1), max_size=20))
def test_n_best_integers_are_written_as_percent_d_writes_them(values):
    from pbmt.base.byte_text import write_int

    for value in values:
        buf = np.zeros(24, np.uint8)
        assert buf[:write_int(buf, 0, value)].tobytes().decode("ascii") == "%d" % value


_NUMBERS = st.floats(allow_nan=False, allow_infinity=False) | st.floats(-1e3, 1e3) | st.sampled_from(
    [-0.0, 1e-05, 1234565.0, 0.0001234565, -100.0, 2.5])


@st.composite
def _sentence_entries(draw):
    """A sentence's n-best entries as ``Entries`` arrays, with their words, names and group sizes."""
    from pbmt.base.nbest import Entries

    words = draw(st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=8))
    sizes = draw(st.lists(st.integers(0, 3), max_size=4))
    names = draw(st.lists(st.text(min_size=1, max_size=8), min_size=len(sizes) + 3, max_size=len(sizes) + 3,
                          unique=True))
    n = draw(st.integers(0, 4))

    def rows(low, high, columns=1):
        """CSR offsets of n rows of 0 to 5 items, and the items: integers in [low, high], ``columns`` a row."""
        counts = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
        items = draw(st.lists(st.integers(low, high), min_size=sum(counts) * columns, max_size=sum(counts) * columns))
        return np.array([0, *np.cumsum(counts)], np.int64), np.array(items, np.int64).reshape(-1, columns)

    def numbers(size):
        return np.array(draw(st.lists(_NUMBERS, min_size=size, max_size=size)), np.float64)

    word_offsets, entry_words = rows(0, len(words) - 1)
    sparse_offsets, sparse_names = rows(len(sizes), len(names) - 1)
    entries = Entries(word_offsets, entry_words[:, 0], numbers(n * sum(sizes)).reshape(n, sum(sizes)),
                      sparse_offsets, sparse_names[:, 0], numbers(int(sparse_offsets[-1])), numbers(n),
                      *rows(0, 10 ** 6, 4), *rows(0, 10 ** 12, 2))
    return draw(st.integers(0, 10 ** 9)), entries, words, names, sizes


@settings(max_examples=300, deadline=None)
@given(_sentence_entries())
def test_the_kernel_writes_each_entrys_line_as_to_line_does(drawn):
    """``entries_text`` (a kernel, and ``moses_line`` for a line with a number it leaves to Python) against
    ``NBestEntry.to_line``, on random entries: any words and names in UTF-8, groups of no value, sparse features
    with and without dense ones, empty hypotheses and segmentations, ties for ``%.6g``'s rounding."""
    from pbmt.base.nbest import entries_text

    sentence, e, words, names, sizes = drawn
    bounds = np.cumsum([0, *sizes])
    expected = []
    for i in range(len(e.totals)):
        row = e.values[i].tolist()
        s0, s1 = e.sparse_offsets[i], e.sparse_offsets[i + 1]
        expected.append(NBestEntry(
            sentence, " ".join(words[w] for w in e.words[e.word_offsets[i]:e.word_offsets[i + 1]]),
            {names[g]: tuple(row[bounds[g]:bounds[g + 1]]) for g in range(len(sizes))}, float(e.totals[i]),
            tuple(map(tuple, e.blocks[e.block_offsets[i]:e.block_offsets[i + 1]].tolist())),
            tuple(map(tuple, e.links[e.link_offsets[i]:e.link_offsets[i + 1]].tolist())),
            tuple((names[k], v) for k, v in zip(e.sparse_names[s0:s1].tolist(), e.sparse_values[s0:s1].tolist())))
            .to_line() + "\n")
    assert entries_text(sentence, e, words, names, sizes) == "".join(expected)
