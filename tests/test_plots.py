"""Plots: the logs are read exactly, the figures draw the logs' numbers, the PNGs are valid, bad logs are named."""

import numpy as np
import pytest
from matplotlib.image import imread

from pbmt.commands.cli import main
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.plots import TRACE_COLUMNS, read_trace, read_tuning_log, save_png, trace_figure, tuning_figure, weights_figure
from pbmt.tune.block_training import BLOCK_TRAINING_LOG
from pbmt.tune.loop import LOOP_LOG
from pbmt.tune.registry import LOG_FORMATS
from pbmt.tune.relevant_set import RELEVANT_SET_LOG
from pbmt.tune.samplerank import SAMPLERANK_LOG

LOOP_LOG_COLUMNS, SAMPLERANK_LOG_COLUMNS = LOOP_LOG.columns, SAMPLERANK_LOG.columns
RELEVANT_SET_LOG_COLUMNS, BLOCK_TRAINING_LOG_COLUMNS = RELEVANT_SET_LOG.columns, BLOCK_TRAINING_LOG.columns

PNG = b"\x89PNG\r\n\x1a\n"
W1, W2, W3 = ("LM0= 0.5 TranslationModel0= 0.1 0.2 WordPenalty0= -1",
              "LM0= 0.25 TranslationModel0= 0.3 -0.2 WordPenalty0= -0.5",
              "LM0= 0.125 TranslationModel0= 0.3 -0.25 WordPenalty0= 0.5")
LOOP_ROWS = [  # iteration, decoded weights, dev, new, size, decode s, optimise s, new weights, pool under them
    (1, W1, 20.5, 100, 100, 1.5, 0.25, W2, 22.25),
    (2, W2, 18.125, 60, 160, 1.25, 0.5, W3, 24.0),
    (3, W3, 23.75, 10, 170, 1.0, 0.5, "LM0= 0.1 TranslationModel0= 0.3 -0.25 WordPenalty0= 0.5", 24.5),
]
SAMPLERANK_ROWS = [  # epoch, averaged, dev, held-out, updates, steps, seconds, mixed
    (1, "LM0= 0.5 WordPenalty0= -1", "21.5", "19.25", 50, 400, 3.5, "LM0= 0.4 WordPenalty0= -0.9"),
    (2, "LM0= 0.45 WordPenalty0= -0.95", "22.75", "18.5", 40, 400, 3.25, "LM0= 0.3 WordPenalty0= -0.8"),
]


def write(path, columns, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["\t".join(columns)] + ["\t".join(map(str, r)) for r in rows]) + "\n")
    return path


@pytest.fixture
def loop_log(tmp_path):
    return write(tmp_path / "mert" / "log.tsv", LOOP_LOG_COLUMNS, LOOP_ROWS)


@pytest.fixture
def samplerank_log(tmp_path):
    return write(tmp_path / "samplerank" / "log.tsv", SAMPLERANK_LOG_COLUMNS, SAMPLERANK_ROWS)


def lines_of(axes):
    return {line.get_label(): (line.get_xdata(), line.get_ydata()) for line in axes.get_lines()
            if not line.get_label().startswith("_")}  # matplotlib's unlabelled lines: guides, not data


def test_tuning_logs_are_read_as_written(loop_log, samplerank_log):
    loop = read_tuning_log(loop_log, LOG_FORMATS)
    assert loop.algorithm == "loop" and loop.step_name == "iteration"
    assert loop.steps.tolist() == [1, 2, 3]
    assert loop.dev_bleu.tolist() == [20.5, 18.125, 23.75] and loop.pool_bleu.tolist() == [22.25, 24.0, 24.5]
    assert loop.weight_names == ("LM0", "TranslationModel0[0]", "TranslationModel0[1]", "WordPenalty0")
    np.testing.assert_array_equal(loop.weights, [[0.5, 0.1, 0.2, -1], [0.25, 0.3, -0.2, -0.5],
                                                 [0.125, 0.3, -0.25, 0.5]])
    sr = read_tuning_log(samplerank_log, LOG_FORMATS)
    assert sr.algorithm == "samplerank" and sr.step_name == "epoch" and sr.pool_bleu is None
    assert sr.dev_bleu.tolist() == [21.5, 22.75] and sr.held_out_bleu.tolist() == [19.25, 18.5]
    np.testing.assert_array_equal(sr.weights, [[0.5, -1], [0.45, -0.95]])  # the averaged weights
    assert loop.held_out_bleu is None


def test_a_samplerank_log_without_the_held_out_column_is_not_read(tmp_path):
    columns = [c for c in SAMPLERANK_LOG_COLUMNS if c != "held_out_bleu"]
    rows = [r[:3] + r[4:] for r in SAMPLERANK_ROWS]
    with pytest.raises(FormatError, match="not a log this command reads"):
        read_tuning_log(write(tmp_path / "old" / "log.tsv", columns, rows), LOG_FORMATS)


def test_tuning_figure_draws_every_run_and_its_pool(loop_log, samplerank_log, tmp_path):
    figure = tuning_figure([read_tuning_log(loop_log, LOG_FORMATS), read_tuning_log(samplerank_log, LOG_FORMATS)],
                           pool=True)
    lines = lines_of(figure.axes[0])
    assert set(lines) == {"mert: dev BLEU", "mert: pool BLEU under the new weights", "samplerank: dev BLEU",
                          "samplerank: held-out BLEU", "untuned weights: 20.50"}  # iteration 1 of a loop decodes with the untuned weights
    assert list(lines["untuned weights: 20.50"][1]) == [20.5, 20.5]
    np.testing.assert_array_equal(lines["mert: dev BLEU"][0], [1, 2, 3])
    np.testing.assert_array_equal(lines["mert: dev BLEU"][1], [20.5, 18.125, 23.75])
    np.testing.assert_array_equal(lines["mert: pool BLEU under the new weights"][1], [22.25, 24.0, 24.5])
    np.testing.assert_array_equal(lines["samplerank: dev BLEU"][1], [21.5, 22.75])
    np.testing.assert_array_equal(lines["samplerank: held-out BLEU"][1], [19.25, 18.5])
    assert figure.axes[0].get_xlabel() == "epoch / iteration"
    labelled = tuning_figure([read_tuning_log(loop_log, LOG_FORMATS)], labels=["MERT, seed 1"])
    assert list(lines_of(labelled.axes[0])) == ["MERT, seed 1: dev BLEU", "untuned weights: 20.50"]
    save_png(figure, tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:8] == PNG
    assert imread(tmp_path / "t.png").shape[:2] == (450, 900)


def test_weights_figure_has_one_line_per_weight(loop_log):
    log = read_tuning_log(loop_log, LOG_FORMATS)
    lines = lines_of(weights_figure(log).axes[0])
    assert list(lines) == list(log.weight_names)
    for column, name in enumerate(log.weight_names):
        np.testing.assert_array_equal(lines[name][0], [1, 2, 3])
        np.testing.assert_array_equal(lines[name][1], log.weights[:, column])


def test_trace_figure_draws_score_and_bleu_per_sentence(tmp_path):
    rows = [(1, 0, 1.0, -30.5, 10.0), (1, 10, 0.5, -25.25, 12.5), (1, 20, 0.25, -24.0, 12.5),
            (3, 0, 1.0, -12.0, 40.0), (3, 10, 0.5, -11.5, 35.0), (3, 20, 0.25, -11.5, 35.0)]
    trace = read_trace(write(tmp_path / "trace.tsv", TRACE_COLUMNS, rows))
    assert trace.sentence.tolist() == [1, 1, 1, 3, 3, 3] and trace.step.tolist() == [0, 10, 20] * 2
    figure = trace_figure(trace)
    score, bleu = (lines_of(axes) for axes in figure.axes)
    np.testing.assert_array_equal(score["sentence 3"][0], [0, 10, 20])
    np.testing.assert_array_equal(score["sentence 3"][1], [-12.0, -11.5, -11.5])
    np.testing.assert_array_equal(bleu["sentence 1"][1], [10.0, 12.5, 12.5])
    assert list(lines_of(trace_figure(trace, sentences=[3]).axes[0])) == ["sentence 3"]
    with pytest.raises(PbmtError, match="no steps of sentence.s. 2"):
        trace_figure(trace, sentences=[2])
    no_bleu = [r[:4] + ("-",) for r in rows]
    figure = trace_figure(read_trace(write(tmp_path / "nobleu.tsv", TRACE_COLUMNS, no_bleu)))
    assert len(figure.axes) == 1  # the score only


@pytest.mark.parametrize("text, line, message", [
    ("epoch\tupdates\tmixed_weights\n1\t2\tLM0= 1\n", 1, "not a log this command reads"),
    ("", 1, "empty file"),
    ("\t".join(LOOP_LOG_COLUMNS) + "\n", None, "no iterations yet"),
    ("\t".join(LOOP_LOG_COLUMNS) + "\n1\tLM0= 1\t20\t5\t5\t1\t1\tLM0= 1\t21\n2\tLM0= 1\t20\t5\n", 3, "4 tab-separated fields"),
    ("\t".join(LOOP_LOG_COLUMNS) + "\n1\tLM0= 1\t20\t5\t5\t1\t1\tLM0= 1\tabc\n", 2,
     "new_weights_pool_bleu 'abc' is not a finite number"),
    ("\t".join(LOOP_LOG_COLUMNS) + "\n1.5\tLM0= 1\t20\t5\t5\t1\t1\tLM0= 1\t21\n", 2, "iteration '1.5' is not an integer"),
    ("\t".join(LOOP_LOG_COLUMNS) + "\n1\tLM0= 1\t20\t5\t5\t1\t1\tLM0= 1\t21\n2\tLM1= 1\t20\t5\t5\t1\t1\tLM0= 1\t21\n", 3,
     "other features than line 2"),
    ("\t".join(LOOP_LOG_COLUMNS) + "\n1\tLM0= x\t20\t5\t5\t1\t1\tLM0= 1\t21\n", 2, "LM0 is not a finite number"),
    ("\t".join(LOOP_LOG_COLUMNS) + "\n2\tLM0= 1\t20\t5\t5\t1\t1\tLM0= 1\t21\n1\tLM0= 1\t20\t5\t5\t1\t1\tLM0= 1\t21\n", None,
     "do not increase"),
])
def test_malformed_logs_name_the_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "log.tsv"
    path.write_text(text)
    with pytest.raises(FormatError, match=message) as err:
        read_tuning_log(path, LOG_FORMATS)
    assert err.value.path == str(path) and err.value.line == line


def test_samplerank_log_without_dev_bleu_cannot_make_a_tuning_curve(tmp_path):
    rows = [r[:2] + ("-", "-") + r[4:] for r in SAMPLERANK_ROWS]
    log = read_tuning_log(write(tmp_path / "sr" / "log.tsv", SAMPLERANK_LOG_COLUMNS, rows), LOG_FORMATS)
    assert np.isnan(log.dev_bleu).all() and np.isnan(log.held_out_bleu).all()
    with pytest.raises(PbmtError, match=r"sr/log.tsv: no dev BLEU .*--no-dev-bleu and without --held-out"):
        tuning_figure([log])
    weights_figure(log)  # the weights are there
    held_out_only = [r[:2] + ("-",) + r[3:] for r in SAMPLERANK_ROWS]
    log = read_tuning_log(write(tmp_path / "held" / "log.tsv", SAMPLERANK_LOG_COLUMNS, held_out_only), LOG_FORMATS)
    lines = lines_of(tuning_figure([log]).axes[0])
    assert list(lines) == ["held: held-out BLEU"] and lines["held: held-out BLEU"][1].tolist() == [19.25, 18.5]


def test_pbmt_plot_writes_pngs_and_reports_bad_files(loop_log, samplerank_log, tmp_path, capsys):
    out = tmp_path / "curves.png"
    assert main(["plot", "tuning", str(loop_log), str(samplerank_log), "--labels", "MERT", "SampleRank",
                 "--pool", "-o", str(out), "-q"]) == 0
    assert out.read_bytes()[:8] == PNG and imread(out).ndim == 3
    assert main(["plot", "weights", str(loop_log), "-o", str(tmp_path / "w.png"), "-q"]) == 0
    assert (tmp_path / "w.png").read_bytes()[:8] == PNG
    assert main(["plot", "tuning", str(loop_log), "--labels", "a", "b", "-o", str(out)]) == 1
    assert "2 labels for 1 logs" in capsys.readouterr().err
    assert main(["plot", "trace", str(loop_log), "-o", str(out)]) == 1
    assert f"{loop_log}:1: not a log this command reads" in capsys.readouterr().err
    assert main(["plot", "weights", str(tmp_path / "missing.tsv")]) == 1
    assert "missing.tsv: no such file" in capsys.readouterr().err
    for log, name in ((loop_log, "log.png"), (loop_log.parent, "folder.png")):  # a run folder: its log.tsv
        assert main(["plot", "tuning", str(log), "-o", str(tmp_path / name), "-q"]) == 0
    assert (tmp_path / "folder.png").read_bytes() == (tmp_path / "log.png").read_bytes()
    assert main(["plot", "tuning", str(tmp_path), "-o", str(out)]) == 1  # a folder holding no log.tsv
    assert capsys.readouterr().err == (f"pbmt plot: error: {tmp_path}: is a directory, expected a log (or a run "
                                       "folder holding a log.tsv)\n")
    assert main(["plot", "weights", str(loop_log), "-o", str(tmp_path / "w.pdf")]) == 1
    assert "name it *.png" in capsys.readouterr().err


BLOCK_ROWS = [  # pass, weights file, sentence BLEU+1, corpus BLEU, features, non-zero, relevant size, decode s, online s,
    # updates
    (1, "pass1/sparse-weights.txt", 43.2559, 41.6228, 236233, 0, 5000, 391.36, 0.0, 0),
    (2, "pass2/sparse-weights.txt", 25.8805, 23.7763, 263829, 170002, 10000, 632.35, 0.39, 75018),
]
RELEVANT_ROWS = [  # pass, decoded weights, dev sBLEU, dev BLEU, relevant BLEU, new, size, decode s, online s, updates
    (1, "LM0= 0.1 WordPenalty0= 0.1", 34.2, 32.5, 32.5, 30, 30, 3.0, 0.0, 0),
    (2, "LM0= 0.105 WordPenalty0= 0.095", 34.3, 32.9, 33.0, 28, 58, 3.0, 0.01, 40),
]


def test_relevant_set_and_binary_feature_logs_are_plotted(tmp_path, capsys):
    block = write(tmp_path / "binary" / "log.tsv", BLOCK_TRAINING_LOG_COLUMNS, BLOCK_ROWS)
    relevant = write(tmp_path / "costmargin" / "log.tsv", RELEVANT_SET_LOG_COLUMNS, RELEVANT_ROWS)
    log = read_tuning_log(block, LOG_FORMATS)
    assert log.algorithm == "block-training" and log.step_name == "pass" and log.pool_bleu is None
    assert log.dev_bleu.tolist() == [41.6228, 23.7763] and log.weights.shape == (2, 0)  # the corpus BLEU column
    lines = lines_of(tuning_figure([log, read_tuning_log(relevant, LOG_FORMATS)], pool=True).axes[0])
    np.testing.assert_array_equal(lines["binary: training-subset BLEU"][1], [41.6228, 23.7763])
    np.testing.assert_array_equal(lines["costmargin: dev BLEU"][1], [32.5, 32.9])
    np.testing.assert_array_equal(lines["costmargin: relevant sets' BLEU under the pass's weights"][1], [32.5, 33.0])
    with pytest.raises(PbmtError, match=r"binary/log.tsv: this log has no weights .*pass<l>/sparse-weights.txt"):
        weights_figure(log)
    out = tmp_path / "curves.png"
    assert main(["plot", "tuning", str(relevant), str(block), "--pool", "-o", str(out), "-q"]) == 0
    assert out.read_bytes()[:8] == PNG
    assert main(["plot", "weights", str(block), "-o", str(out)]) == 1
    assert "has no weights" in capsys.readouterr().err


def test_a_collapse_is_marked_instead_of_stretching_the_axis(tmp_path):
    rows = [(1, "LM0= 0.5", 20.0, 10, 10, 1, 1, "LM0= 0.6", 21.0), (2, "LM0= 0.6", 22.0, 10, 20, 1, 1, "LM0= 9", 23.0),
            (3, "LM0= 9", 0.5, 10, 30, 1, 1, "LM0= 0.7", 23.5), (4, "LM0= 0.7", 23.0, 10, 40, 1, 1, "LM0= 0.8", 24.0)]
    log = read_tuning_log(write(tmp_path / "mert" / "log.tsv", LOOP_LOG_COLUMNS, rows), LOG_FORMATS)
    axes = tuning_figure([log]).axes[0]
    dev = lines_of(axes)["mert: dev BLEU"][1]
    assert dev[[0, 1, 3]].tolist() == [20.0, 22.0, 23.0] and np.isnan(dev[2])
    low, high = axes.get_ylim()
    assert 18 < low < 20 and 23 < high < 25  # the range of the other iterations, not down to 0.5
    assert [t.get_text() for t in axes.texts] == ["collapsed: 0.5"]
    (x, y), = axes.collections[0].get_offsets()
    assert x == 3 and low < y < 20


def test_iterations_below_the_untuned_weights_are_ringed_with_their_distance(tmp_path):
    rows = [(1, "LM0= 0.5", 42.65, 10, 10, 1, 1, "LM0= 0.6", 43.0), (2, "LM0= 0.6", 42.9, 10, 20, 1, 1, "LM0= 0.7", 44.0),
            (3, "LM0= 0.7", 36.11, 10, 30, 1, 1, "LM0= 0.8", 44.5), (4, "LM0= 0.8", 42.648, 10, 40, 1, 1, "LM0= 0.9", 45.0),
            (5, "LM0= 0.9", 44.0, 10, 50, 1, 1, "LM0= 1", 45.5)]
    log = read_tuning_log(write(tmp_path / "mert" / "log.tsv", LOOP_LOG_COLUMNS, rows), LOG_FORMATS)
    axes = tuning_figure([log]).axes[0]
    ringed, = [c for c in axes.collections if c.get_label() == "below the untuned weights"]
    assert ringed.get_offsets().tolist() == [[3, 36.11]]  # 42.648 prints as the untuned 42.65: not ringed
    assert [t.get_text() for t in axes.texts] == ["-6.54"]
    assert "below the untuned weights" in [t.get_text() for t in axes.get_legend().get_texts()]
    assert not [c for c in tuning_figure([log], baseline=30.0).axes[0].collections]


def test_weights_figure_names_columns_leaves_out_fixed_weights_and_draws_the_untuned(tmp_path):
    weights = [f"UnknownWordPenalty0= 1 LM0= {0.5 + k / 10} LexicalReordering0= 0.3 0.3 0.3 {0.3 + k / 10} 0.3 0.3"
               for k in (1, 2, 3, 4)]
    rows = [(k, weights[k - 1], 20.0 + k, 10, 10, 1, 1, weights[k], 21.0) for k in (1, 2, 3)]
    log = read_tuning_log(write(tmp_path / "mert" / "log.tsv", LOOP_LOG_COLUMNS, rows), LOG_FORMATS)
    figure = weights_figure(log, initial={"UnknownWordPenalty0": [1], "LM0": [0.5],
                                          "LexicalReordering0": [0.3] * 6})
    lines = lines_of(figure.axes[0])
    assert list(lines) == ["LM0", "LexicalReordering0 mono (f)"]  # the other six never moved
    assert lines["LM0"][0].tolist() == [0, 1, 2, 3] and lines["LM0"][1].tolist() == pytest.approx([0.5, 0.6, 0.7, 0.8])
    assert "UnknownWordPenalty0 = 1" in figure.texts[0].get_text()
    styles = {(line.get_color(), line.get_linestyle(), line.get_marker()) for line in figure.axes[0].get_lines()
              if not line.get_label().startswith("_")}
    assert len(styles) == 2
    everything = lines_of(weights_figure(log, all_weights=True).axes[0])
    assert len(everything) == 8 and "LexicalReordering0 disc (b)" in everything


def test_readable_column_names():
    from pbmt.base.feature_labels import column_labels, readable

    assert readable("LexicalReordering0[3]") == "LexicalReordering0 mono (f)"
    assert readable("TranslationModel0[1]") == "TranslationModel0 lex(f|e)"
    assert readable("TranslationModel0[1]", size=2) == "TranslationModel0[1]"  # not Moses's four scores
    assert readable("LM0") == "LM0" and readable("Custom0[2]") == "Custom0[2]"
    assert column_labels(["LM0", "tm"], [1, 4], ["KENLM", "PhraseDictionaryMemory"]) == [
        "LM0", "tm p(f|e)", "tm lex(f|e)", "tm p(e|f)", "tm lex(e|f)"]
