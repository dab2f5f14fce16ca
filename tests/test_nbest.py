import gzip
import hashlib
import io
import itertools
import subprocess
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
