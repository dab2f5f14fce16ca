"""The real-text benchmark's instruments: the protected-token classifier and the gettext segmenting."""

import gzip
import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"benchmarks_{name}"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = load("bench_real_text")
corpus = load("gettext_corpus")


@pytest.mark.parametrize("text, expected", [
    ("Ya existe «%s».", {"printf": Counter({"%s": 1})}),
    ("%1$d de %2$s, 100%% hecho", {"printf": Counter({"%1$d": 1, "%2$s": 1, "%%": 1})}),
    ("un 50% de descuento", {}),
    ("%1 de %2 copiados", {"positional": Counter({"%1": 1, "%2": 1})}),
    ("Hola {name}, {0}", {"brace": Counter({"{name}": 1, "{0}": 1})}),
    ("<b>Fondo</b> &lt;b&gt;", {"tag": Counter({"<b>": 1, "</b>": 1}), "entity": Counter({"&lt;": 1, "&gt;": 1})}),
    ("Véase https://www.ejemplo.es/informe-2024.html.", {"url": Counter({"https://www.ejemplo.es/informe-2024.html": 1})}),
    ("Escriba a juan@ejemplo.es o abra /etc/fstab y ~/.bashrc", {
        "email": Counter({"juan@ejemplo.es": 1}), "path": Counter({"/etc/fstab": 1, "~/.bashrc": 1})}),
    ("Crear _carpeta, &Abrir, F_ull, entrada/salida y/o %s_%d __x", {
        "accelerator": Counter({"_": 2, "&": 1}), "printf": Counter({"%s": 1, "%d": 1})}),
])
def test_protected_tokens_by_class(text, expected):
    assert bench.protected_tokens(text) == expected


def test_keep_rates_count_only_tokens_the_reference_keeps_and_damage_anywhere_fails():
    sources = ["Crear _carpeta", "%1 de %2", "Abrir %s", "«%s»"]
    references = ["Create _Folder", "%1 of %2", "Open it", "'%s'"]
    outputs = ["Create _ Folder", "%1 of %2", "Open it", "'% s'"]
    rates = bench.keep_rates(sources, references, outputs)
    assert rates["accelerator"] == {"segments": 1, "kept": 0}
    assert rates["positional"] == {"segments": 1, "kept": 1}
    assert rates["printf"] == {"segments": 1, "kept": 0}  # the third reference drops its %s: not counted
    assert rates["all"] == {"segments": 3, "kept": 1}
    assert bench.lowercase_rate(["abrir", "abrir", "Abrir"], ["open", "Open", "open"], ["Open", "x", "y"]) == \
        {"segments": 1, "kept": 0}


@pytest.mark.parametrize("text, expected", [
    ("no se pudo abrir `%s': %s", {"%s": 1}),
    ("archivo «%s» y “%1”, '%d', \"{name}\", „%s“", {"%s": 2, "%1": 1, "%d": 1, "{name}": 1}),
    ("archivo `%s %s': y “%s ” y «%s' y '%s --help'", {}),  # moved, spaced, mismatched, not alone
])
def test_quoted_placeholders_are_those_alone_between_a_pair_of_marks(text, expected):
    assert bench.quoted_placeholders(text) == Counter(expected)


def test_quoted_rate_counts_segments_whose_reference_quotes_the_same_placeholders():
    sources = ["abrir «%s»: %s", "abrir «%s»", "abrir %s", "«%1» y «%2»"]
    references = ["open `%s': %s", "open %s", "open %s", "\"%1\" and \"%2\""]
    outputs = ["open `%s %s':", "open '%s'", "open '%s'", "'%1' and '%2 ”"]
    assert bench.quoted_rate(sources, references, outputs) == {"segments": 2, "kept": 0}
    assert bench.quoted_rate(sources, references, references) == {"segments": 2, "kept": 2}


def test_the_pbmt_command_runs_the_tree_given_even_from_another_checkout(tmp_path, monkeypatch):
    import subprocess

    fake = tmp_path / "other" / "pbmt"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("print('the other tree')")
    monkeypatch.chdir(BENCHMARKS.parent)  # this checkout's pbmt is in the working folder
    command, env = bench.pbmt_command(tmp_path / "other")
    assert subprocess.run(command, env=env, capture_output=True, text=True).stdout == "the other tree\n"


def test_multi_line_messages_pair_line_by_line_only_when_the_lines_match_up():
    assert corpus.segment_pairs("Usage:\n  tar  [OPTION]\n", "Uso:\n\ttar [OPCIÓN]\n") == \
        [("Uso:", "Usage:"), ("tar [OPCIÓN]", "tar [OPTION]")]
    assert corpus.segment_pairs("One line.\nTwo.", "Una sola línea.") == [("Una sola línea.", "One line. Two.")]


def test_split_is_by_package_deterministic_and_keeps_large_packages_out_of_test():
    units = {f"p{k}": [corpus.Segment("a", "b", f"p{k}/d")] * (10 + k) for k in range(20)}
    units["huge"] = [corpus.Segment("a", "b", "huge/d")] * 1000
    first = corpus.split(units, 1, 40, 20, 100, 0.5)
    assert first == corpus.split(units, 1, 40, 20, 100, 0.5)
    assert "huge" not in first["test"] + first["dev"]
    assert sum(len(units[n]) for n in first["test"]) >= 40
    assert sorted(sum(first.values(), [])) == sorted(units)
    assert first != corpus.split(units, 2, 40, 20, 100, 0.5)


def test_code_classes_count_pages_calls_and_options_apart_from_all():
    text = "véase stat(2), open() y -H o --follow; no volumen(es), e-mail ni 2 -3"
    assert bench.protected_tokens(text, bench.CODE_CLASSES) == {
        "page or call": Counter({"stat(2)": 1, "open()": 1}), "option": Counter({"-H": 1, "--follow": 1})}
    rates = bench.keep_rates([text], [text], ["see stat (2), open() and -h or --follow"], bench.CODE_CLASSES)
    assert rates == {"page or call": {"segments": 1, "kept": 0}, "option": {"segments": 1, "kept": 0},
                     "all": {"segments": 1, "kept": 0}}


manpages = load("manpage_corpus")

SPANISH_PAGE = r""".\" comentario
.TH TAIL 1 "Septiembre de 2022" "GNU coreutils 9.1"
.SH NOMBRE
tail \- muestra la parte final de un archivo
.SH DESCRIPCIÓN
.PP
Muestra las últimas 10 líneas. Si se indica más de un
archivo, se encabeza cada salida.
.TP
\fB\-c\fP, \fB\-\-bytes\fP=\fI\,[\/\fP+]NUM
muestra los últimos NUM bytes \(em véase
.BR stat (2)
.nf
tail \-f registro
.fi
.PP
Un párrafo que la versión inglesa no tiene.
.SH VÉASE TAMBIÉN
\fBhead\fP(1)
"""
ENGLISH_PAGE = r""".TH TAIL "1" "September 2022" "GNU coreutils 9.1"
.SH NAME
tail \- output the last part of files
.SH DESCRIPTION
.PP
Print the last 10 lines.
With more than one FILE, precede each with a header.
.TP
\fB\-c\fR, \fB\-\-bytes\fR=\fI\,[\/\fR+]NUM
output the last NUM bytes \(em see
.BR stat (2)
.nf
tail \-f log
.fi
.SH "SEE ALSO"
\fBhead\fP(1)
"""


def test_manual_pages_pair_by_their_requests_and_split_into_sentences_only_when_both_sides_agree():
    pairs = [segment for block in manpages.paired_blocks(SPANISH_PAGE, ENGLISH_PAGE)
             for segment in manpages.segments(*block)]
    assert pairs == [
        ("NOMBRE", "NAME"),
        ("tail - muestra la parte final de un archivo", "tail - output the last part of files"),
        ("DESCRIPCIÓN", "DESCRIPTION"),
        ("Muestra las últimas 10 líneas.", "Print the last 10 lines."),
        ("Si se indica más de un archivo, se encabeza cada salida.", "With more than one FILE, precede each with a header."),
        ("-c, --bytes=[+]NUM muestra los últimos NUM bytes — véase stat(2)",
         "-c, --bytes=[+]NUM output the last NUM bytes — see stat(2)"),
        ("VÉASE TAMBIÉN", "SEE ALSO"),
        ("head(1)", "head(1)"),
    ]


def test_the_man_page_corpus_says_when_no_english_page_matches(tmp_path, monkeypatch):
    spanish = tmp_path / "out" / "es" / "man1"
    spanish.mkdir(parents=True)
    (spanish.parent / ".extracted").touch()
    (spanish / "tail.1.gz").write_bytes(gzip.compress(SPANISH_PAGE.encode()))
    monkeypatch.setattr(sys, "argv", ["manpage_corpus.py", "--out", str(tmp_path / "out"), "--english",
                                      str(tmp_path / "missing")])
    with pytest.raises(SystemExit, match="no English page under"):
        manpages.main()
    assert not (tmp_path / "out" / "test.es").exists()
