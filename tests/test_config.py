import pytest

from pbmt.base.config import FEATURE_TYPES, MosesConfig, read_weights
from pbmt.base.errors import FormatError, PbmtError

GOOD = """\
# a comment
[distortion-limit]
6

[feature]
UnknownWordPenalty
WordPenalty
PhraseDictionaryMemory name=TranslationModel0 num-features=4 path=model/pt.gz input-factor=0
KENLM path=/abs/lm.arpa order=3
Distortion

[weight]
UnknownWordPenalty0= 1
WordPenalty0= -1
TranslationModel0= 0.2 0.2 0.2 0.2
LM0= 0.5
Distortion0= 0.3
"""


def _ini(tmp_path, text):
    path = tmp_path / "moses.ini"
    path.write_text(text)
    return path


def test_read_names_features_like_moses(tmp_path):
    config = MosesConfig.read(_ini(tmp_path, GOOD))
    assert [f.name for f in config.features] == [
        "UnknownWordPenalty0", "WordPenalty0", "TranslationModel0", "LM0", "Distortion0"]
    assert config.weights["TranslationModel0"] == (0.2, 0.2, 0.2, 0.2)
    assert config.setting("distortion-limit", -1, int) == 6
    assert config.setting("stack", 200, int) == 200
    assert config.resolve(config.feature("TranslationModel0").args["path"]) == tmp_path / "model" / "pt.gz"
    assert str(config.resolve(config.feature("LM0").args["path"])) == "/abs/lm.arpa"


def test_write_then_read_round_trips(tmp_path):
    config = MosesConfig.read(_ini(tmp_path, GOOD))
    tuned = config.with_weights({"LM0": (0.123456789,)})
    tuned.write(tmp_path / "out" / "tuned.ini")
    again = MosesConfig.read(tmp_path / "out" / "tuned.ini")
    assert again.weights == tuned.weights and again.features == tuned.features
    assert again.settings == tuned.settings
    with pytest.raises(PbmtError):
        config.with_weights({"LM0": (1.0, 2.0)})


def test_shared_moses_ini(bible):
    config = MosesConfig.read(bible / "model" / "moses.ini")
    assert config.weights["LexicalReordering0"] == (0.3,) * 6
    assert config.resolve(config.feature("LM0").args["path"]).resolve() == (bible / "lm3.arpa.gz").resolve()


@pytest.mark.parametrize(
    "text, line, reason",
    [
        ("[feature]\nSRILM path=x\n[weight]\n", 2, "unsupported feature 'SRILM'; pbmt supports: " + ", ".join(FEATURE_TYPES)),
        ("[feature]\nWordPenalty\n[weight]\nWordPenalty0= a\n", 4, "not all numbers"),
        ("[feature]\nWordPenalty\n[weight]\nWordPenalty0= 1 2\n", 4, "1 scores but 2 weights"),
        ("[feature]\nWordPenalty\n[weight]\nLM0= 1\n", 4, "not a feature"),
        ("[feature]\nKENLM order=3\n", 2, "needs path=FILE"),
        ("[ttable-file]\n0 0 0 5 pt.gz\n", 1, "version 1"),
        ("6\n", 1, "before any [section]"),
        ("[feature]\nWordPenalty oops\n", 2, "expected key=value"),
        ("[feature]\nWordPenalty\nWordPenalty name=WordPenalty0\n", 3, "a second feature"),
        ("[feature]\nWordPenalty\n[weight]\n", 2, "no weights for WordPenalty0: give each feature a line"),
        ("[feature]\nWordPenalty\nPhrasePenalty\nDistortion\n[weight]\nWordPenalty0= 1\n", 3,
         "no weights for PhrasePenalty0, Distortion0"),
        ("[feature]\nWordPenalty\n[weight]\nWordPenalty0= nan\n", 4, "must be finite"),
        ("[feature]\nWordPenalty\n[weight]\nWordPenalty0= 1e999\n", 4, "must be finite"),
        ("[feature]\nWordPenalty\n[weight]\nWordPenalty0= \u0663\n", 4, "not all numbers"),
        ("[feature]\nWordPenalty\n[weight]\nWordPenalty0= 1\nWordPenalty0= 2\n", 5, "a second weight line"),
        ("[feature]\nWordPenalty\n[weight]\nWordPenalty0= 1\n[weight]\n", 5, "a second [weight] section"),
        ("[stack]\n10\n[feature]\nWordPenalty\n[weight]\nWordPenalty0= 1\n[stack]\n20\n", 7,
         "a second [stack] section"),
        ("[feature]\nKENLM path=a path=b order=3\n", 2, "path= is given twice"),
        ("[feature]\nPhraseDictionaryMemory num-features=0 path=pt\n", 2, "not a positive integer"),
    ],
)
def test_errors_name_the_line(tmp_path, text, line, reason):
    path = _ini(tmp_path, text)
    with pytest.raises(FormatError) as err:
        MosesConfig.read(path)
    assert err.value.line == line and reason in str(err.value) and str(path) in str(err.value)


def test_a_model_folder_given_for_its_moses_ini_names_the_file(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(PbmtError, match=r"model: is a directory; a model is given by its moses.ini$"):
        MosesConfig.read(tmp_path / "model")
    (tmp_path / "model" / "moses.ini").write_text("[feature]\n")
    with pytest.raises(PbmtError, match=r"is a directory; a model is given by its moses.ini: .*model/moses.ini"):
        MosesConfig.read(tmp_path / "model")


def test_weights_of_a_moses_ini_or_of_a_weight_section_alone(tmp_path):
    assert read_weights(_ini(tmp_path, GOOD)) == MosesConfig.read(_ini(tmp_path, GOOD)).weights
    alone = tmp_path / "weights.txt"
    alone.write_text("[weight]\n# as mert-moses.pl prints them\nLM0= 0.5\nTranslationModel0= 0.1 0.2 0.3 0.4\n")
    assert read_weights(alone) == {"LM0": (0.5,), "TranslationModel0": (0.1, 0.2, 0.3, 0.4)}


@pytest.mark.parametrize("text, line, reason", [
    ("[weight]\nLM0= 1\nLM0= 2\n", 3, "a second weight line for LM0 (the first is on line 2)"),
    ("[weight]\nLM0= x\n", 2, "not a finite number"),
    ("[weight]\n", None, "nor weight lines"),
    ("[stack]\n10\n", None, "nor weight lines"),
    ("LM0= 1\n", 1, "before any [section]"),
])
def test_a_weight_section_alone_is_checked_line_by_line(tmp_path, text, line, reason):
    path = tmp_path / "weights.txt"
    path.write_text(text)
    with pytest.raises(FormatError) as err:
        read_weights(path)
    assert err.value.line == line and reason in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("section, value, reason", [
    ("stack", "0", "at least 1"), ("stack", "\u0663", "not a valid int"), ("beam-threshold", "2", "in [0, 1]"),
    ("beam-threshold", "nan", "finite number"), ("ttable-limit", "0", "at least 1"),
    ("distortion-limit", "-2", "at least -1"), ("max-phrase-length", "0", "at least 1"),
])
def test_search_settings_out_of_range_name_the_ini(tmp_path, section, value, reason):
    from pbmt.model.model import SearchSettings

    path = _ini(tmp_path, f"[{section}]\n{value}\n" + GOOD.split("\n", 3)[3])
    with pytest.raises(FormatError) as err:
        SearchSettings.from_config(MosesConfig.read(path))
    assert str(path) in str(err.value) and reason in str(err.value)


def test_written_paths_in_or_below_the_folder_are_relative_so_the_folder_can_move(tmp_path):
    from dataclasses import replace

    config = MosesConfig.read(_ini(tmp_path, GOOD))
    folder = tmp_path / "tuned"
    where = {"TranslationModel0": str(folder / "model" / "pt.gz"), "LM0": "/abs/lm.arpa"}
    config = replace(config, features=tuple(replace(f, args={**f.args, "path": where[f.name]}) if f.name in where
                                            else f for f in config.features))
    config.write(folder / "moses.ini")
    text = (folder / "moses.ini").read_text()
    assert "path=model/pt.gz" in text and "path=/abs/lm.arpa" in text and str(tmp_path) not in text
    (folder / "model").mkdir()
    (folder / "model" / "pt.gz").write_bytes(b"")
    moved = folder.rename(tmp_path / "moved")
    again = MosesConfig.read(moved / "moses.ini")
    assert again.resolve(again.feature("TranslationModel0").args["path"]).is_file()


@pytest.mark.parametrize("present, named, hint", [
    ("model/pt.gz", "model/pt.gz", "model/pt.gz is a file from the working directory, from where Moses reads a "
                                   "relative path: pbmt reads it from the moses.ini's folder"),
    ("cfg/pt.gz", "pt", "cfg/pt.gz is there: add .gz to path="),
    ("cfg/pt.minphr", "pt", "cfg/pt.minphr is a compact table, which pbmt does not read: name the text table"),
    ("elsewhere/pt.gz", "pt.gz", None),
])
def test_a_path_naming_no_file_says_which_file_may_be_meant(tmp_path, monkeypatch, present, named, hint):
    """Moses reads a relative path= from the working directory, pbmt from the ini's folder; a file the error
    can see under another reading is named, so a Moses user's ini written by hand is mended at once."""
    from pbmt.model.model import TranslationModel

    monkeypatch.chdir(tmp_path)
    (tmp_path / present).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / present).write_text("")
    (tmp_path / "cfg").mkdir(exist_ok=True)
    ini = _ini(tmp_path / "cfg", GOOD.replace("path=model/pt.gz", f"path={named}"))
    with pytest.raises(FormatError) as err:
        TranslationModel.load(ini)
    assert err.value.line == 8 and f"path={named} names no file ({tmp_path / 'cfg' / named})" in str(err.value)
    assert (hint in str(err.value)) if hint else str(err.value).endswith(f"({tmp_path / 'cfg' / named})")


def test_a_binary_phrase_table_asks_for_the_text_one(tmp_path):
    path = _ini(tmp_path, "[feature]\nPhraseDictionaryCompact name=TranslationModel0 num-features=4 path=pt.minphr\n")
    with pytest.raises(FormatError, match=r"moses.ini:2: unsupported feature 'PhraseDictionaryCompact': pbmt reads "
                                          r"phrase tables as text \(PhraseDictionaryMemory path="):
        MosesConfig.read(path)


def test_a_reordering_path_without_gz_reads_the_gz_as_moses_does(tiny_model_dir, tmp_path):
    """Moses's lexicalized reordering opens ``path.gz`` when ``path`` names no file (and ini files of Moses
    models name the table so); a phrase table's path= stays as written (its error names the .gz)."""
    import shutil

    import numpy as np

    from pbmt.model.model import TranslationModel

    shutil.copytree(tiny_model_dir, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    ini = tmp_path / "moses.ini"
    ini.write_text(ini.read_text().replace("path=reordering-table.gz", "path=reordering-table"))
    assert MosesConfig.read(ini).feature("LexicalReordering0").args["path"] == "reordering-table.gz"

    expected = TranslationModel.load(tiny_model_dir / "moses.ini").reordering
    assert np.count_nonzero(expected) and np.array_equal(TranslationModel.load(ini).reordering, expected)
    (tmp_path / "reordering-table").write_text("")  # a file of the name given is read, as Moses reads it
    assert MosesConfig.read(ini).feature("LexicalReordering0").args["path"] == "reordering-table"
    ini.write_text(ini.read_text().replace("path=phrase-table.gz", "path=phrase-table"))
    with pytest.raises(FormatError, match="phrase-table.gz is there: add .gz to path="):
        TranslationModel.load(ini)
