import io
import shutil
import subprocess

import numpy as np
import pytest

from pbmt.base.protected import encode
from pbmt.commands.cli import main
from pbmt.search.explain import explain
from pbmt.search.explain_views import render_dot, render_html, render_text
from pbmt.model.model import TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import score_derivation
from pbmt.search.options import TranslationOptions


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


@pytest.fixture(scope="module")
def explained(tiny):
    return explain(tiny, "c a e b d".split(), n_best=5)


def test_numbers_equal_score_derivation_of_the_1best(tiny, explained):
    options = TranslationOptions.build(tiny, tiny.vocab.ids("c a e b d".split()))
    best = decode(tiny, options)[0]
    assert explained.best.derivation == best.derivation
    np.testing.assert_allclose(explained.features, score_derivation(best.derivation, options, tiny), atol=1e-12)
    np.testing.assert_allclose(explained.contributions.sum(0) + explained.end, explained.features, atol=1e-9)
    assert (explained.contributions.sum(0) + explained.end) @ tiny.weights == pytest.approx(best.score, abs=1e-9)
    text = render_text(explained, tiny)
    assert f"model score {best.score:.4f}" in text


def test_options_table_equals_translation_options(tiny, explained):
    text = render_text(explained, tiny, options_per_span=1000)
    o = explained.options
    for i in range(o.n_words):
        for j in range(i + 1, min(o.n_words, i + o.max_length) + 1):
            count = len(o.span(i, j))
            header = f"  [{i}-{j - 1}] {' '.join(explained.source[i:j])}  ({count} options)"
            assert (header in text) == (count > 0)
    shown = sum(1 for line in text.splitlines() if line.startswith("      ") and " future " in line)
    assert shown == len(o)


def test_search_counts_are_consistent(explained):
    stats = explained.graph.stats
    assert stats[:, 1].sum() <= stats[:, 0].sum()  # expanded <= classes
    assert (stats[:, 3] <= stats[:, 2]).all()  # recombined <= added
    assert stats[1:, 2].sum() == len(explained.graph.parent) - 1


def test_dot_parses(tiny, explained, tmp_path):
    dot = render_dot(explained, tiny)
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    path = tmp_path / "g.dot"
    path.write_text(dot)
    subprocess.run(["dot", "-Tsvg", str(path), "-o", str(tmp_path / "g.svg")], check=True)
    assert (tmp_path / "g.svg").stat().st_size > 0


def test_html_renders_in_headless_chromium(tiny, explained, tmp_path):
    page = tmp_path / "e.html"
    page.write_text(render_html(explained, tiny))
    assert "http://" not in page.read_text() and "https://" not in page.read_text()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless Chromium is not installed (Debian package chromium)")
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,1600",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    assert shot.stat().st_size > 1000


def test_explain_command(tiny_model_dir, tmp_path, capsys):
    assert main(["explain", "-f", str(tiny_model_dir / "moses.ini"), "a b c", "--html", str(tmp_path / "p.html"),
                 "--dot", str(tmp_path / "g.dot")]) == 0
    out = capsys.readouterr().out
    assert "BEST DERIVATION" in out and "SEARCH" in out
    assert (tmp_path / "p.html").read_text().startswith("<!DOCTYPE html>")
    assert main(["explain", "-f", str(tiny_model_dir / "moses.ini"), "  "]) == 1
    assert main(["explain", "-f", str(tiny_model_dir / "moses.ini"), "c a e b d", "--stack", "1",
                 "--distortion-limit", "0"]) == 0
    search = capsys.readouterr().out.split("SEARCH")[1]
    expanded = [int(line.split()[2]) for line in search.splitlines()[2:8]]
    assert expanded == [1, 1, 1, 1, 1, 0]  # one hypothesis kept per stack, the last one complete



def test_explain_reads_its_line_from_standard_input_as_every_verb_reads_text(tiny_model_dir, capsys, monkeypatch):
    """'-' is a file of one line: a byte order mark and CR LF dropped, bad UTF-8 and a second line refused
    naming <stdin> and the line (the second was silently dropped, bad bytes became U+FFFD tokens)."""
    ini = str(tiny_model_dir / "moses.ini")
    assert main(["explain", "-f", ini, "c a e"]) == 0
    expected = capsys.readouterr().out

    def explain_stdin(data: bytes) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
        code = main(["explain", "-f", ini, "-"])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    assert explain_stdin(b"\xef\xbb\xbfc a e\r\n") == (0, expected, "")
    assert explain_stdin(b"c a e") == (0, expected, "")
    assert explain_stdin(b"c \xff e\n") == (1, "", "pbmt explain: error: <stdin>:1: not valid UTF-8 (byte 3 of the "
                                                  "line)\n")
    assert explain_stdin(b"c a e\nb d\n") == (1, "", "pbmt explain: error: <stdin>:2: explain takes one sentence, "
                                                   "and this is a second line (head -n 1 gives the first alone)\n")

@pytest.mark.parametrize("algorithm", ["cube", "stack"])
@pytest.mark.parametrize("stack_size, beam", [(200, 1e-5), (3, 0.0), (20, 0.2)])
def test_replayed_pruning_matches_the_decoders_counts(tiny, stack_size, beam, algorithm):
    """hypothesis_table re-derives each stack's fate from the graph; the kernel counted it independently."""
    import dataclasses

    from pbmt.search.explain import EXPANDED, RECOMBINED, explanation_data, hypothesis_table

    settings = dataclasses.replace(tiny.settings, stack_size=stack_size, beam_threshold=beam, distortion_limit=-1,
                                   search=algorithm, pop_limit=50)
    e = explain(tiny, "c a e b d a b".split(), n_best=8, settings=settings)
    table, g = hypothesis_table(e), e.graph
    representative = table.representative == np.arange(len(g.parent))
    for s in range(1, e.options.n_words + 1):
        members = table.stack == s
        assert members.sum() == g.stats[s, 2]
        assert (members & representative).sum() == g.stats[s, 0]
        assert (members & (table.status == RECOMBINED)).sum() == g.stats[s, 3]
        if s < e.options.n_words:
            assert (members & (table.status == EXPANDED)).sum() == g.stats[s, 1]
    assert all(table.status[p] == EXPANDED for p in set(g.parent[1:].tolist()))  # only expanded ones have children
    data = explanation_data(e, tiny)
    for entry, scored in zip(data["nbest"], e.nbest):  # each n-best path re-adds up to the entry's score
        path, via = entry["path"], entry["via"]
        assert [int(g.option[h]) for h in path] == scored.derivation.option.tolist()
        for k, h in enumerate(path):
            assert g.parent[h] == (via[k] if via[k] is not None else (path[k - 1] if k else 0))
        # through a recombined hypothesis instead of its representative: the score differs by their difference
        detour = sum(g.score[via[k]] - g.score[path[k - 1] if k else 0] for k in range(len(path)) if via[k] is not None)
        assert g.score[path[-1]] - detour == pytest.approx(scored.score, abs=1e-9)


def test_a_protected_tokens_space_is_shown_as_a_space(tiny, tmp_path):
    """A tag's space is a private-use character in its token form (pbmt.base.protected.encode): explain's views
    show the tag as the user wrote it."""
    tag = encode('<a href="x">')
    explained = explain(tiny, ["c", tag, "a", "</a>", "e"], n_best=2)
    text = render_text(explained, tiny)
    page = render_html(explained, tiny)
    dot = render_dot(explained, tiny)
    assert '1:<a href="x">' in text and "'<a href=\"x\">' -> '<a href=\"x\">'" in text
    assert "&lt;a href=&quot;x&quot;&gt;" in page
    assert '<a href=\\"x\\">' in dot
    for shown in (text, page, dot):
        assert not any(0xE000 <= ord(c) < 0xE100 for c in shown)
