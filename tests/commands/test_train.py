"""``pbmt train`` and ``pbmt filter`` end to end on the first 300 verse pairs
of the shared Bible corpus: the model loads and translates, a repeated run
skips every step, a changed input re-runs only what depends on it, and the
filtered model translates its input as the full one does."""

import gzip

import pytest
from sacremoses import MosesTokenizer, MosesTruecaser

from pbmt.commands.cli import main
from pbmt.base.config import MosesConfig
from pbmt.base.files import read_lines
from pbmt.model.model import TranslationModel
from pbmt.model.sparse import WordClasses
from pbmt.train.osm import identical_singletons, operation_sequence

N = 300


def lines(path):
    return [line for _, line in read_lines(path)]


@pytest.fixture(scope="module")
def corpus_slice(bible, tmp_path_factory):
    """The first N lines of the detokenised texts and of the shared alignments."""
    folder = tmp_path_factory.mktemp("slice")
    for name in ("train.es", "train.en", "train.align.gdfa", "train.align.fwd", "train.align.rev"):
        (folder / name).write_text("\n".join(lines(bible / name)[:N]) + "\n", encoding="utf-8")
    return folder


def train_args(data, out, *extra):
    return ["train", "--src", str(data / "train.es"), "--tgt", str(data / "train.en"), "--out", str(out),
            *extra]


@pytest.fixture(scope="module")
def model(corpus_slice, tmp_path_factory):
    out = tmp_path_factory.mktemp("model")
    assert main(train_args(corpus_slice, out, "--alignment", str(corpus_slice / "train.align.gdfa"), "-q")) == 0
    return out


def test_model_has_moses_default_configuration_and_tokenised_corpus(model, bible, corpus_slice, tmp_path):
    ours, moses = MosesConfig.read(model / "moses.ini"), MosesConfig.read(bible / "model" / "moses.ini")
    assert ours.weights == moses.weights  # train-model.perl's defaults
    assert ours.settings["distortion-limit"] == moses.settings["distortion-limit"] == ("6",)
    for mine, theirs in zip(ours.features, moses.features, strict=True):
        assert (mine.type, mine.name, mine.n_scores) == (theirs.type, theirs.name, theirs.n_scores)
        assert {k: v for k, v in mine.args.items() if k != "path"} == {
            k: v for k, v in theirs.args.items() if k != "path"}
    assert [f.args["path"] for f in ours.features if "path" in f.args] == [
        "phrase-table.gz", "reordering-table.gz", "lm.arpa.gz"]  # relative to the model folder
    # cased text is truecased by default: sacremoses's truecaser, trained on the tokenised text and applied as
    # truecase.perl does (use_known), but that a lowercase word inside a sentence stays lowercase; lowercased,
    # it is the shared tokenised text
    for side, lang, name in (("src", "es", "source"), ("tgt", "en", "target")):
        tokenised = [MosesTokenizer(lang).tokenize(line, escape=False)
                     for line in lines(corpus_slice / f"train.{lang}")]
        truecaser = MosesTruecaser()
        truecaser.train(tokenised)
        truecased = lines(model / "work" / f"corpus.{side}")
        moses = [truecaser.truecase(" ".join(t), return_str=True, use_known=True) for t in tokenised]
        differ = [(w, o, m) for t, ours, theirs in zip(tokenised, truecased, moses, strict=True)
                  for w, o, m in zip(t, ours.split(), theirs.split(), strict=True) if o != m]
        assert all(o == w and w.islower() for w, o, _ in differ) and len(differ) < 0.001 * sum(map(len, tokenised))
        assert [line.lower() for line in truecased] == lines(bible / f"train.tok.{lang}")[:N]
        # the model file is Moses's format, which sacremoses (and truecase.perl) read
        plain = tmp_path / f"truecase-model.{name}"
        plain.write_bytes(gzip.decompress((model / f"truecase-model.{name}.gz").read_bytes()))
        assert MosesTruecaser(load_from=str(plain)).model["best"] == truecaser.model["best"]
    classes = WordClasses.read(model / "word-classes.txt")  # the target side's classes, for sparse features
    assert len(classes.names) == 50 and set(classes.words) == {w for line in lines(model / "work" / "corpus.tgt")
                                                                for w in line.split()}
    assert (model / "pbmt.toml").read_text() == (
        '[preprocess]\ntokenize = true\nlowercase = false\ntruecase = true\nsource_language = "es"\n'
        'target_language = "en"\nsource_truecaser = "truecase-model.source.gz"\n'
        'target_truecaser = "truecase-model.target.gz"\n')


def test_lowercased_model_keeps_the_shared_token_form(corpus_slice, bible, tmp_path):
    out = tmp_path / "model"
    assert main(train_args(corpus_slice, out, "--casing", "lowercase", "--alignment",
                           str(corpus_slice / "train.align.gdfa"), "--word-class-count", "0", "-q")) == 0
    assert lines(out / "work" / "corpus.src") == lines(bible / "train.tok.es")[:N]
    assert lines(out / "work" / "corpus.tgt") == lines(bible / "train.tok.en")[:N]
    assert "lowercase = true\ntruecase = false" in (out / "pbmt.toml").read_text()
    assert not (out / "truecase-model.source.gz").exists()


def test_trained_model_translates_plain_text(model, corpus_slice, tmp_path):
    src = tmp_path / "in.es"
    src.write_text("\n".join(lines(corpus_slice / "train.es")[:3]) + "\n", encoding="utf-8")
    assert main(["translate", "-q", "-f", str(model / "moses.ini"), "-i", str(src), "-o", str(tmp_path / "out")]) == 0
    out = lines(tmp_path / "out")
    assert len(out) == 3 and out[0].startswith("In the beginning God created the heaven")  # detokenised


def test_second_run_skips_every_step_and_a_changed_source_reruns_its_dependents(corpus_slice, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train.es", "train.en", "train.align.gdfa"):
        (data / name).write_bytes((corpus_slice / name).read_bytes())
    out = tmp_path / "model"
    args = train_args(data, out, "--alignment", str(data / "train.align.gdfa"))
    assert main(args) == 0
    first = capsys.readouterr().err
    assert "5 of 5 steps run" in first and "[2/5] tables:" in first
    table = (out / "phrase-table.gz").read_bytes()

    (data / "train.en").touch()  # a new modification time alone changes nothing
    assert main(args) == 0
    again = capsys.readouterr().err
    assert "0 of 5 steps run" in again and again.count("up to date, skipped") == 5

    # one more (unaligned) word at the end of a source line: the target side, hence the LM, is unchanged
    src = lines(data / "train.es")
    src[4] += " Amén."
    (data / "train.es").write_text("\n".join(src) + "\n", encoding="utf-8")
    assert main(args) == 0
    log = capsys.readouterr().err
    assert "2 of 5 steps run" in log
    assert "[3/5] lm: up to date" in log and "[4/5] classes: up to date" in log and "[5/5] config: up to date" in log
    assert (out / "phrase-table.gz").read_bytes() != table
    assert any("amén" in line.split(" ||| ")[0].lower().split() for line in lines(out / "phrase-table.gz"))

    # an option changes the tables only
    assert main(args + ["--prune", "2"]) == 0
    assert "1 of 5 steps run" in capsys.readouterr().err


def test_filtered_model_translates_its_input_as_the_full_model(model, corpus_slice, tmp_path):
    src = tmp_path / "in.es"
    src.write_text("\n".join(lines(corpus_slice / "train.es")[10:14]) + "\n", encoding="utf-8")
    filtered = tmp_path / "filtered"
    assert main(["filter", "-q", "-f", str(model / "moses.ini"), "-i", str(src), "--out", str(filtered)]) == 0
    config = MosesConfig.read(filtered / "moses.ini")
    assert config.resolve(config.feature("LM0").args["path"]) == (model / "lm.arpa.gz").resolve()
    assert config.feature("TranslationModel0").args["path"] == "phrase-table.gz"
    full, kept = lines(model / "phrase-table.gz"), lines(filtered / "phrase-table.gz")
    assert 0 < len(kept) < len(full) / 5 and set(kept) <= set(full)
    assert [line.split(" ||| ")[:2] for line in lines(filtered / "reordering-table.gz")] == [
        line.split(" ||| ")[:2] for line in kept]
    outputs = []
    for folder in (model, filtered):
        assert main(["translate", "-q", "-f", str(folder / "moses.ini"), "-i", str(src),
                     "-o", str(tmp_path / f"{folder.name}.out")]) == 0
        outputs.append(lines(tmp_path / f"{folder.name}.out"))
    assert outputs[0] == outputs[1] and all(outputs[0])


def test_directed_alignments_are_symmetrised_as_moses_symal(corpus_slice, bible, tmp_path):
    out = tmp_path / "model"
    assert main(train_args(corpus_slice, out, "--alignment-fwd", str(corpus_slice / "train.align.fwd"),
                           "--alignment-rev", str(corpus_slice / "train.align.rev"), "-q")) == 0
    assert lines(out / "work" / "alignment.gdfa") == lines(bible / "train.align.gdfa")[:N]


def test_given_lm_is_copied_with_its_order(model, corpus_slice, tmp_path):
    lm = tmp_path / "given.arpa"
    with gzip.open(model / "lm.arpa.gz", "rt", encoding="utf-8") as handle:
        lm.write_text(handle.read(), encoding="utf-8")
    out = tmp_path / "model"
    assert main(train_args(corpus_slice, out, "--alignment", str(corpus_slice / "train.align.gdfa"),
                           "--lm", str(lm), "-q")) == 0
    assert lines(out / "lm.arpa.gz") == lines(lm)
    assert MosesConfig.read(out / "moses.ini").feature("LM0").args["order"] == "3"


def test_two_estimated_and_a_given_lm_are_three_features(model, corpus_slice, tmp_path):
    """Repeated --lm-order estimates an LM of each order from the target text (LM0, LM1), before the given
    --lm (LM2): a model that loads with each LM its own feature and weight, the one LM's 0.5 shared evenly;
    the second estimated LM is the one pbmt lm estimates from the same text."""
    given = []
    for order in (2, 3):
        lm = tmp_path / f"given{order}.arpa"
        assert main(["lm", str(model / "work" / "corpus.tgt"), str(lm), "--order", str(order),
                     "--discount-fallback", "-q"]) == 0
        given.append(lm)
    out = tmp_path / "model"
    assert main(train_args(corpus_slice, out, "--alignment", str(corpus_slice / "train.align.gdfa"), "--lm-order",
                           "4", "--lm-order", "2", "--lm", str(given[1]), "--discount-fallback",
                           "--word-class-count", "0", "-q")) == 0
    config = MosesConfig.read(out / "moses.ini")
    lms = [f for f in config.features if f.type == "KENLM"]
    assert [(f.name, f.args["path"], f.args["order"]) for f in lms] == [
        ("LM0", "lm.arpa.gz", "4"), ("LM1", "lm1.arpa.gz", "2"), ("LM2", "lm2.arpa.gz", "3")]
    assert [config.weights[f.name] for f in lms] == [(pytest.approx(0.5 / 3),)] * 3
    assert lines(out / "lm1.arpa.gz") == lines(given[0])
    assert lines(out / "lm2.arpa.gz") == lines(given[1])
    loaded = TranslationModel.load(out / "moses.ini")  # decoding with several LMs: tests/search/test_several_lms.py
    assert [lm.order for lm in loaded.lms] == [4, 2, 3]


def test_mismatched_line_counts_name_both_files_and_the_line(corpus_slice, tmp_path, capsys):
    short = tmp_path / "short.en"
    short.write_text("\n".join(lines(corpus_slice / "train.en")[:N - 1]) + "\n", encoding="utf-8")
    args = ["train", "--src", str(corpus_slice / "train.es"), "--tgt", str(short), "--out", str(tmp_path / "m")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"{corpus_slice / 'train.es'} has {N} lines but {short} has {N - 1}" in err and f"line {N} of" in err


def test_a_refused_run_leaves_no_folder_it_made_and_keeps_the_folders_it_found(corpus_slice, tmp_path, capsys):
    short = tmp_path / "short.en"
    short.write_text("a\n", encoding="utf-8")
    refused = ["train", "--src", str(corpus_slice / "train.es"), "--tgt", str(short)]
    assert main([*refused, "--out", str(tmp_path / "new" / "model"), "--work-dir", str(tmp_path / "w" / "work")]) == 1
    assert not (tmp_path / "new").exists() and not (tmp_path / "w").exists(), list((tmp_path / "new").rglob("*"))
    (tmp_path / "found").mkdir()
    (tmp_path / "found" / "notes.txt").write_text("mine")
    assert main([*refused, "--out", str(tmp_path / "found")]) == 1
    assert [p.name for p in (tmp_path / "found").iterdir()] == ["notes.txt"]
    assert "has no counterpart" in capsys.readouterr().err


@pytest.mark.parametrize("missing", ["--src", "--alignment"])
def test_missing_input_is_an_error_before_anything_is_written(corpus_slice, tmp_path, capsys, missing):
    args = {"--src": corpus_slice / "train.es", "--tgt": corpus_slice / "train.en", "--out": tmp_path / "m",
            missing: tmp_path / "nope"}
    assert main(["train", *(str(x) for pair in args.items() for x in pair)]) == 1
    assert f"{tmp_path / 'nope'}: no such file" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_a_directory_or_a_corpus_of_empty_pairs_is_an_error_of_one_line(corpus_slice, tmp_path, capsys):
    args = ["train", "--tgt", str(corpus_slice / "train.en"), "--out", str(tmp_path / "m")]
    assert main(args + ["--src", str(tmp_path)]) == 1
    assert f"{tmp_path}: is a directory, expected a file" in capsys.readouterr().err
    (tmp_path / "blank.es").write_text("\n \n")
    (tmp_path / "two.en").write_text("a\nb\n")
    args = ["train", "--src", str(tmp_path / "blank.es"), "--tgt", str(tmp_path / "two.en"), "--out", str(tmp_path / "m")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "blank.es" in err and "no line pair has words on both sides (2 lines): nothing to train on" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("option, value, message", [
    ("--shard-size", "0", "--shard-size must be at least 1, not 0"),
    ("--workers", "0", "--workers must be at least 1, not 0"),
    ("--min-count", "-2", "--min-count must be at least 1, not -2"),
    ("--lm-order", "0", "--lm-order must be 1 to 127, not 0"),
    ("--lm-order", "128", "--lm-order must be 1 to 127, not 128"),  # the ARPA reader keeps orders in an int8
    ("--max-phrase-length", "9", "--max-phrase-length must be 1 to 8, not 9"),
    ("--memory", "5X", "memory size '5X' is not a number"),
])
def test_bad_option_values_are_usage_errors_of_one_line(corpus_slice, tmp_path, capsys, option, value, message):
    args = train_args(corpus_slice, tmp_path / "m", option, value)
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse's own type errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m" / "moses.ini").exists()


def test_pairs_with_an_empty_side_are_dropped_with_their_alignment_lines(corpus_slice, tmp_path, capsys):
    src, tgt, gdfa = (lines(corpus_slice / n)[:20] for n in ("train.es", "train.en", "train.align.gdfa"))
    src[2], tgt[6], gdfa[2], gdfa[6] = "", "  ", "", ""
    for name, text in (("s.es", src), ("s.en", tgt), ("s.gdfa", gdfa)):
        (tmp_path / name).write_text("\n".join(text) + "\n", encoding="utf-8")
    out = tmp_path / "model"
    assert main(["train", "--src", str(tmp_path / "s.es"), "--tgt", str(tmp_path / "s.en"), "--out", str(out),
                 "--casing", "lowercase", "--alignment", str(tmp_path / "s.gdfa"), "--discount-fallback"]) == 0
    assert "18 sentence pairs; dropped 2 with an empty side (lines 3, 7)" in capsys.readouterr().err
    kept = [s for s in range(20) if s not in (2, 6)]
    assert lines(out / "work" / "alignment.gdfa") == [gdfa[s] for s in kept]
    assert len(lines(out / "work" / "corpus.src")) == len(lines(out / "work" / "corpus.tgt")) == 18


def test_a_log_redirected_to_a_file_has_the_steps_lines_and_no_progress_bars_or_aligner_output(corpus_slice,
                                                                                                tmp_path, capsys):
    for lang in ("es", "en"):
        (tmp_path / f"t.{lang}").write_text("\n".join(lines(corpus_slice / f"train.{lang}")[:40]) + "\n",
                                            encoding="utf-8")
    assert main(["train", "--src", str(tmp_path / "t.es"), "--tgt", str(tmp_path / "t.en"), "--out",
                 str(tmp_path / "m"), "--word-class-count", "0", "--discount-fallback"]) == 0
    log = capsys.readouterr().err
    assert "pbmt train: [2/5] align: " in log and "pbmt train: [1/5] corpus: 40 sentence pairs; truecased" in log
    assert "\r" not in log and "eflomal" not in log and "Aligning" not in log
    assert all(line.startswith("pbmt train: ") for line in log.splitlines())


def test_osm_trains_an_operation_sequence_model(corpus_slice, tmp_path):
    """--osm ORDER writes the operation sequence of every aligned pair (pbmt.train.osm) and an n-gram model of
    that order over them, as ``pbmt lm`` estimates it, named in moses.ini as Moses's train-model.perl names it."""
    out = tmp_path / "model"
    assert main(train_args(corpus_slice, out, "--alignment", str(corpus_slice / "train.align.gdfa"), "--osm", "3",
                           "--discount-fallback", "--word-class-count", "0", "-q")) == 0
    config = MosesConfig.read(out / "moses.ini")
    (osm,) = [f for f in config.features if f.type == "OpSequenceModel"]
    assert (osm.name, osm.n_scores, osm.args["path"]) == ("OpSequenceModel0", 5, "osm.arpa.gz")
    # train-model.perl's, but the gap count (third) at 0, so that tuning picks its sign
    assert config.weights["OpSequenceModel0"] == (0.08, -0.02, 0.0, -0.001, 0.03)
    work = out / "work"
    src, tgt, alignment = (lines(work / name) for name in ("corpus.src", "corpus.tgt", "alignment.gdfa"))
    pairs = [(f.split(), e.split(), [tuple(map(int, p.split("-"))) for p in a.split()])
             for f, e, a in zip(src, tgt, alignment)]
    identical = identical_singletons(pairs)
    assert identical  # words copied once in 300 verses (names)
    expected = [" ".join(operation_sequence(*pair, identical)) for pair in pairs]
    assert lines(work / "operations.gz") == expected
    assert main(["lm", str(work / "operations.gz"), str(tmp_path / "ops.arpa"), "--order", "3",
                 "--discount-fallback", "-q"]) == 0
    assert lines(out / "osm.arpa.gz") == lines(tmp_path / "ops.arpa")
