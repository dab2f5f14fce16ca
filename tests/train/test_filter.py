"""Filtering to a test set (as Moses's filter-model-given-input.pl) and pruning."""

import numpy as np
import pytest

from pbmt.base.errors import PbmtError
from pbmt.train.corpus import alignment_from_points, corpus_from_lines
from pbmt.train.extract import extract_phrase_pairs
from pbmt.train.filter import filter_to_sentences, prune, source_ngrams
from pbmt.train.score import score_phrase_pairs, word_translation


def test_filter_keeps_the_source_phrases_moses_kept(bible_table, bible_table_for_dev_test, moses_phrase_table):
    kept = bible_table_for_dev_test.pairs
    # model/README.md: 370,384 pairs over 40,161 source phrases
    assert len(kept) == 370_384
    assert len(np.unique(kept.src_index)) == 40_161
    assert np.all(np.diff(kept.src_index) >= 0)  # table order kept
    texts = kept.src.strings()
    assert {texts[i] for i in np.unique(kept.src_index)} == {f[0] for f in moses_phrase_table}
    # counts and scores are those of the full table
    assert np.array_equal(kept.count, bible_table.pairs.count[np.isin(bible_table.pairs.src_index, kept.src_index)])


def _tiny_table(random_corpus):
    srcs, tgts, aligns = random_corpus(np.random.default_rng(3), 60)
    src, tgt, alignment = corpus_from_lines(srcs), corpus_from_lines(tgts), alignment_from_points(aligns)
    return score_phrase_pairs(extract_phrase_pairs(src, tgt, alignment, 3), word_translation(src, tgt, alignment))


def test_filter_on_a_tiny_table(random_corpus):
    table = _tiny_table(random_corpus)
    sentences = [["a", "ñ", "b"], ["ab"]]
    kept = filter_to_sentences(table, sentences)
    texts = table.pairs.src.strings()
    wanted = {"a", "ñ", "b", "a ñ", "ñ b", "a ñ b", "ab"}
    expected = [p for p in range(len(table)) if texts[table.pairs.src_index[p]] in wanted]
    assert kept.pairs.count.tolist() == table.pairs.count[expected].tolist()
    assert np.array_equal(kept.features, table.features[expected])
    assert source_ngrams(sentences, 2) == {"a", "ñ", "b", "a ñ", "ñ b", "ab"}


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_prune_keeps_the_best_per_source_phrase(random_corpus, limit):
    table = _tiny_table(random_corpus)
    kept = prune(table, limit)
    expected = []
    for s in np.unique(table.pairs.src_index):
        rows = np.flatnonzero(table.pairs.src_index == s)
        best = sorted(rows, key=lambda r: (-table.features[r, 2], r))[:limit]
        expected.extend(sorted(best))
    assert np.array_equal(kept.features, table.features[sorted(expected)])
    with pytest.raises(PbmtError):
        prune(table, 0)


def test_filtering_a_moses_model_with_untokenised_text_is_a_warning(bible, tmp_path, capsys):
    """The shared model has no pbmt.toml: its input is taken as tokens, and plain text (punctuation on its words)
    keeps fewer phrases than its tokens would; the warning names the first such line, as translate's does."""
    from pbmt.commands.cli import main

    plain, tokens = tmp_path / "dev.es", tmp_path / "dev.tok.es"
    for text in (plain, tokens):
        lines = (bible / text.name).read_text(encoding="utf-8").splitlines(keepends=True)
        text.write_text("".join(lines[:5]), encoding="utf-8")
    kept = {}
    for text in (plain, tokens):
        assert main(["filter", "-f", str(bible / "model" / "moses.ini"), "-i", str(text), "--out",
                     str(tmp_path / text.name.replace(".", "-"))]) == 0
        err = capsys.readouterr().err
        kept[text] = int(err.split("kept ")[1].split(" of")[0].replace(",", ""))
        warned = f"pbmt filter: warning: {plain}:1: " in err and "5 of 5 lines are not in the model's token form" in err
        assert warned == (text == plain), err
    assert kept[plain] < kept[tokens]
    assert main(["filter", "-q", "-f", str(bible / "model" / "moses.ini"), "-i", str(plain), "--out",
                 str(tmp_path / "quiet")]) == 0
    assert capsys.readouterr().err == ""  # -q: errors only


def test_filtering_into_the_folder_of_the_models_tables_is_refused_and_they_stay(tiny_model_dir, tmp_path, capsys):
    """A Moses layout: the tuned moses.ini in one folder, the tables it names in another. --out the tables'
    folder wrote each filtered table over the table it read."""
    from pbmt.commands.cli import main

    tables, tuned = tmp_path / "model", tmp_path / "tuning"
    tables.mkdir()
    tuned.mkdir()
    for name in ("phrase-table.gz", "reordering-table.gz"):
        (tables / name).write_bytes((tiny_model_dir / name).read_bytes())
    ini = (tiny_model_dir / "moses.ini").read_text()
    (tuned / "moses.ini").write_text(ini.replace("path=phrase-table.gz", f"path={tables / 'phrase-table.gz'}")
                                     .replace("path=reordering-table.gz", f"path={tables / 'reordering-table.gz'}"))
    (tmp_path / "in.txt").write_text("a b c\n")
    before = {p.name: p.read_bytes() for p in tables.iterdir()}
    argv = ["filter", "-q", "--tokenized", "-f", str(tuned / "moses.ini"), "-i", str(tmp_path / "in.txt"), "--out"]
    assert main([*argv, str(tables)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pbmt filter: error: {tables / 'phrase-table.gz'}: is an input of this run too"), err
    assert {p.name: p.read_bytes() for p in tables.iterdir()} == before
    assert main([*argv, str(tmp_path / "filtered")]) == 0
    assert len((tmp_path / "filtered" / "phrase-table.gz").read_bytes()) < len(before["phrase-table.gz"])
