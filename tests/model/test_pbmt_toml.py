"""pbmt.toml: pbmt-only settings beside a moses.ini that Moses can load ([search] reordering, one writer)."""

import pytest

from pbmt.commands.cli import main
from pbmt.base.config import MosesConfig
from pbmt.base.errors import PbmtError
from pbmt.model.model import Preprocessing, SearchSettings
from pbmt.base.pbmt_toml import read_tables, write_tables

INI = """[distortion-limit]
3

[feature]
WordPenalty

[weight]
WordPenalty0= -1
"""


def test_reordering_is_read_from_the_search_table(tmp_path):
    (tmp_path / "moses.ini").write_text(INI)
    assert SearchSettings.from_config(MosesConfig.read(tmp_path / "moses.ini")).reordering == "distortion"
    write_tables(tmp_path, {"preprocess": {"tokenize": True}, "search": {"reordering": "mon-swap"}})
    settings = SearchSettings.from_config(MosesConfig.read(tmp_path / "moses.ini"))
    assert settings.reordering == "mon-swap" and settings.distortion_limit == 3
    assert Preprocessing.read(tmp_path).tokenize is True
    assert read_tables(tmp_path) == {"preprocess": {"tokenize": True}, "search": {"reordering": "mon-swap"}}


def test_an_ini_with_a_reordering_section_is_an_error_saying_where_it_moved(tmp_path):
    (tmp_path / "moses.ini").write_text(INI + "\n[reordering]\nmon-swap\n")
    with pytest.raises(PbmtError, match=r"moses.ini: \[reordering\] is a pbmt setting.*reordering = \"mon-swap\"' "
                                        r"under \[search\] in .*pbmt.toml"):
        SearchSettings.from_config(MosesConfig.read(tmp_path / "moses.ini"))


@pytest.mark.parametrize("text,message", [
    ('[search]\nreordering = "ibm"\n', "unknown reordering mode 'ibm'"),
    ('[search]\nstack = 5\n', r"pbmt.toml: unknown \[search\] keys \['stack'\]"),
    ('[decoder]\nx = 1\n', "pbmt.toml: unknown table or key 'decoder'"),
    ('[search\n', "pbmt.toml: "),
])
def test_bad_search_tables_are_errors_naming_the_file(tmp_path, text, message):
    (tmp_path / "moses.ini").write_text(INI)
    (tmp_path / "pbmt.toml").write_text(text)
    with pytest.raises(PbmtError, match=message):
        SearchSettings.from_config(MosesConfig.read(tmp_path / "moses.ini"))


def test_tuning_with_mon_swap_writes_a_folder_that_translates_mon_swap(tiny_model_dir, tiny_dev, tmp_path):
    out = tmp_path / "cm"
    assert main(["tune", "-q", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tiny_dev / "dev.src"),
                 "--refs", str(tiny_dev / "dev.ref"), "--out", str(out), "--algorithm", "costmargin", "--passes", "2",
                 "--reordering", "mon-swap", "--sgd-passes", "2"]) == 0
    assert SearchSettings.from_config(MosesConfig.read(out / "moses.ini")).reordering == "mon-swap"
    assert "[reordering]" not in (out / "moses.ini").read_text()


@pytest.mark.parametrize("table,message", [
    ('truecase = true\nlowercase = true\n', r"sets both lowercase and truecase"),
    ('truecase = true\nsource_truecaser = "tc.source"\n', r"truecase = true needs source_truecaser and target_truecaser"),
    ('truecase = true\nsource_truecaser = "tc.source"\ntarget_truecaser = "missing"\n',
     r"target_truecaser = 'missing': .*missing does not exist"),
    ('source_truecaser = 3\n', r"source_truecaser must be a str"),
])
def test_bad_preprocess_tables_are_errors_naming_the_file(tmp_path, table, message):
    (tmp_path / "tc.source").write_text("Dios (3/3)\n", encoding="utf-8")
    (tmp_path / "pbmt.toml").write_text("[preprocess]\n" + table)
    with pytest.raises(PbmtError, match=r"pbmt.toml: \[preprocess\] " + message):
        Preprocessing.read(tmp_path)


def test_a_truecased_model_written_elsewhere_takes_its_truecasers_along(tmp_path):
    model, elsewhere = tmp_path / "model", tmp_path / "tuned"
    model.mkdir()
    (model / "tc.source").write_text("Dios (3/3)\n", encoding="utf-8")
    (model / "tc.target").write_text("God (5/5)\n", encoding="utf-8")
    write_tables(model, {"preprocess": {"truecase": True, "source_truecaser": "tc.source",
                                        "target_truecaser": "tc.target"}})
    preprocessing = Preprocessing.read(model)
    assert preprocessing.source_form.tokens("DIOS dijo") == ["Dios", "dijo"]
    write_tables(elsewhere, {"preprocess": preprocessing.table(elsewhere)})
    again = Preprocessing.read(elsewhere)
    assert again.source_truecaser == (elsewhere / "tc.source").resolve()
    assert again.target_form.tokens("GOD said") == ["God", "said"]
