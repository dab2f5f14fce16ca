"""Costmargin and perceptron (Tillmann & Zhang): Eq. 4 and 7 by hand, the online steps against plain Python,
resume, and a short run on the shared model."""

import dataclasses
import pickle

import numpy as np
import pytest

from pbmt.commands.cli import main
from pbmt.base.config import MosesConfig
from pbmt.base.errors import PbmtError
from pbmt.metrics.bleu import sentence_bleu_plus1
from pbmt.model.features import FeatureLayout
from pbmt.base.plots import read_tuning_log
from pbmt.tune.relevant_set import RELEVANT_SET_LOG
from pbmt.tune._relevant_set_kernels import (costmargin_epoch, costmargin_loss, costmargin_update, perceptron_epoch,
                                           sparse_costmargin_epoch)
from pbmt.base.run_state import CHECKPOINT
from pbmt.model.block_features import BlockWeights
from pbmt.model.model import TranslationModel
from pbmt.model.sparse import SparseModel
from pbmt.search.decoder import decode
from pbmt.search.options import TranslationOptions
from pbmt.tune.pool import Pool
from pbmt.tune.relevant_set import Costmargin, Perceptron, RelevantSetSettings, seed_weights
from pbmt.tune.tuner import TuningData
from resumption import assert_resumed_as_uninterrupted


def test_loss_is_eq4():
    # (b - b') (1 - (s - s'))_+^2
    assert costmargin_loss(2.0, 0.5, 1.5, 0.2) == pytest.approx(0.3 * 0.5 ** 2)
    assert costmargin_loss(1.0, 0.5, 1.5, 0.2) == pytest.approx(0.3 * 1.5 ** 2)
    assert costmargin_loss(3.0, 0.5, 1.5, 0.2) == 0.0  # margin of at least 1: no loss
    assert costmargin_loss(1.0, 0.2, 1.0, 0.2) == 0.0  # equal BLEU: no loss


def test_update_is_eq7_by_hand():
    w = np.array([0.1, -0.2])
    costmargin_update(w, np.array([1.0, 2.0]), 0.4, 0.5)
    # w.y = -0.3, (1 - w.y)_+ = 1.3: w + 0.5 * 0.4 * 1.3 * y
    np.testing.assert_allclose(w, [0.1 + 0.26, -0.2 + 0.52])
    w = np.array([1.0, 0.5])
    costmargin_update(w, np.array([1.0, 0.5]), 0.4, 0.5)  # w.y = 1.25: hinge inactive
    np.testing.assert_array_equal(w, [1.0, 0.5])


def test_costmargin_epoch_takes_the_eq6_alternative_and_the_eq7_step():
    truth_x, truth_b = np.array([[1.0, 0.0]]), np.array([0.6])
    rel_x = np.array([[0.0, 1.0], [0.5, 0.5]])
    rel_b = np.array([0.5, 0.1])
    w = np.array([0.2, 0.0])
    # truth score 0.2; losses: (0.6-0.5)(1-0.2)^2 = 0.064 and (0.6-0.1)(1-0.1)^2 = 0.405: the second
    updates = costmargin_epoch(np.array([0]), np.array([0, 1]), truth_x, truth_b, np.array([0, 2]), rel_x, rel_b,
                               w, 0.1)
    assert updates == 1
    # y = (0.5, -0.5), w.y = 0.1: w + 0.1 * 0.5 * 0.9 * y
    np.testing.assert_allclose(w, [0.2 + 0.0225, -0.0225])


def test_perceptron_epoch_by_hand():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    b = np.array([0.3, 0.7, 0.1])
    w = np.array([0.0, 0.0])
    # all scores 0: t is the first candidate; s the second (BLEU 0.7)
    assert perceptron_epoch(np.array([0]), np.array([0, 3]), x, b, w, 0.5) == 1
    np.testing.assert_allclose(w, [-0.5, 0.5])
    # now the third scores 0 and the second 0.5: s = t, no update
    assert perceptron_epoch(np.array([0]), np.array([0, 3]), x, b, w, 0.5) == 0


def _random_pool(rng, n_sentences=6, per_sentence=5, size=4):
    layout = FeatureLayout(tuple(f"F{i}" for i in range(size)), ("",) * size, (1,) * size)
    n = n_sentences * per_sentence
    stats = np.zeros((n, 10), dtype=np.int64)
    stats[:, 0] = stats[:, 1] = 10
    stats[:, 6:] = [10, 9, 8, 7]
    stats[:, 2] = rng.integers(1, 10, n)
    stats[:, 3:6] = np.minimum(stats[:, 2:3], rng.integers(0, 7, (n, 3)))
    offsets = np.arange(0, n + 1, per_sentence, dtype=np.int64)
    return Pool(layout, rng.normal(size=(n, size)), stats, offsets, np.arange(n, dtype=np.uint64), ("x",) * n)


def _plain_table(pool, tuner, rng):
    """Tables II (Eq. 6/7 form) and III in plain Python, from zero weights."""
    x, b = pool.features, sentence_bleu_plus1(pool.stats)
    w = np.zeros(x.shape[1])
    for _ in range(tuner.sgd_passes):
        for i in rng.permutation(pool.n_sentences):
            rows = range(pool.offsets[i], pool.offsets[i + 1])
            s = max(rows, key=lambda m: (b[m], -m))
            if tuner.name == "perceptron":
                t = max(rows, key=lambda m: (x[m] @ w, -m))
                if t != s:
                    w = w + tuner.learning_rate * (x[s] - x[t])
                continue
            losses = [(b[s] - b[m]) * max(0.0, 1 - (x[s] @ w - x[m] @ w)) ** 2 for m in rows]
            if max(losses) > 0:
                t = rows[int(np.argmax(losses))]
                y = x[s] - x[t]
                w = w + tuner.learning_rate * (b[s] - b[t]) * y * max(0.0, 1 - w @ y)
    return w


@pytest.mark.parametrize("tuner", [Costmargin, Perceptron])
def test_online_training_step_equals_plain_python(tuner):
    pool = _random_pool(np.random.default_rng(3))
    tuner = tuner(sgd_passes=7, learning_rate=0.05)
    fitted = tuner.fit(TuningData(pool=pool), np.zeros(pool.layout.size), np.random.default_rng(11))
    np.testing.assert_allclose(fitted.weights_, _plain_table(pool, tuner, np.random.default_rng(11)), atol=1e-12)
    assert fitted.updates_ > 0 and np.any(fitted.weights_ != 0)


@pytest.mark.parametrize("tuner", [Costmargin, Perceptron])
def test_a_fixed_feature_keeps_its_weight_and_takes_no_part(tuner):
    # the pool's column F1 varies, as an unknown word's penalty would: the training is the plain one without it
    pool = _random_pool(np.random.default_rng(3))
    initial = np.array([0.0, 1.0, 0.0, 0.0])
    fitted = tuner(sgd_passes=7, learning_rate=0.05, fixed=("F1",)).fit(TuningData(pool=pool), initial,
                                                                       np.random.default_rng(11))
    without = dataclasses.replace(pool, features=pool.features * [1, 0, 1, 1])
    expected = _plain_table(without, tuner(sgd_passes=7, learning_rate=0.05), np.random.default_rng(11))
    assert fitted.weights_[1] == 1.0 and expected[1] == 0.0
    np.testing.assert_allclose(fitted.weights_[[0, 2, 3]], expected[[0, 2, 3]], atol=1e-12)
    assert tuner().fixed == ("UnknownWordPenalty0",)


def test_seed_weights_are_flat_and_the_models_or_flat_and_perturbed():
    layout, model = FeatureLayout(("A", "B"), ("", ""), (1, 3)), np.array([0.5, -1.0, 0.2, 0.3])
    w1, w2 = seed_weights(layout, RelevantSetSettings(), np.random.default_rng(0), model)
    np.testing.assert_array_equal(w1, [0.1] * 4)
    np.testing.assert_array_equal(w2, model)
    w1, w2 = seed_weights(layout, RelevantSetSettings(model_seed=False), np.random.default_rng(0), model)
    np.testing.assert_array_equal(w1, [0.1] * 4)
    assert np.all(np.abs(w2 - w1) <= 0.01) and np.any(w2 != w1)
    # a fixed feature keeps the model's weight in both seeds
    for model_seed in (True, False):
        w1, w2 = seed_weights(layout, RelevantSetSettings(model_seed=model_seed), np.random.default_rng(0), model,
                              ("A",))
        assert w1[0] == w2[0] == 0.5 and w1[1:].tolist() == [0.1] * 3
        assert np.array_equal(w2, model) if model_seed else np.all(np.abs(w2[1:] - 0.1) <= 0.01)


def test_settings_are_checked():
    with pytest.raises(PbmtError, match="passes"):
        RelevantSetSettings(passes=1)
    with pytest.raises(PbmtError, match="learning rate"):
        Costmargin(learning_rate=0)


def tune_args(model_dir, dev, out, algorithm, passes, *extra):
    return ["tune", "-q", "-f", str(model_dir / "moses.ini"), "--src", str(dev / "dev.src"), "--refs",
            str(dev / "dev.ref"), "--out", str(out), "--algorithm", algorithm, "--passes", str(passes), *extra]


@pytest.mark.parametrize("algorithm", ["costmargin", "perceptron"])
def test_resume_reaches_the_uninterrupted_weights(tiny_model_dir, tiny_dev, tmp_path, algorithm):
    extra = ("--n-best-size", "3", "--reordering", "mon-swap", "--sgd-passes", "5", "--learning-rate", "0.01")
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "full", algorithm, 5, *extra)) == 0
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "parts", algorithm, 3, *extra)) == 0
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "parts", algorithm, 5, "--resume", *extra)) == 0
    assert_resumed_as_uninterrupted(tmp_path / "parts", tmp_path / "full", ("moses.ini", "run5.moses.ini"))
    # UnknownWordPenalty0 keeps the model's weight, as MERT keeps it (trained from zero it was 0)
    for name in ("moses.ini", "run1.moses.ini", "run5.moses.ini"):
        assert MosesConfig.read(tmp_path / "full" / name).weights["UnknownWordPenalty0"] == \
            MosesConfig.read(tiny_model_dir / "moses.ini").weights["UnknownWordPenalty0"]
    log = read_tuning_log(tmp_path / "full" / "log.tsv", [RELEVANT_SET_LOG])
    assert log.steps.tolist() == [1, 2, 3, 4, 5]
    rows = [line.split("\t") for line in (tmp_path / "full" / "log.tsv").read_text().splitlines()]
    assert rows[0][:3] == ["pass", "decoded_weights", "dev_sentence_bleu"]
    with np.load(tmp_path / "full" / CHECKPOINT) as arrays:
        assert arrays["pool_offsets"][-1] == int(rows[-1][rows[0].index("relevant_size")])
    # each pass's decoded weights are its run<l>.moses.ini
    layout = FeatureLayout.from_config(MosesConfig.read(tmp_path / "full" / "moses.ini"))
    for step, weights in zip(log.steps, log.weights):
        decoded = layout.weights(MosesConfig.read(tmp_path / "full" / f"run{step}.moses.ini"))
        np.testing.assert_allclose(decoded, weights, rtol=1e-8)
    # another algorithm cannot resume the run
    other = "perceptron" if algorithm == "costmargin" else "costmargin"
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "parts", other, 6, "--resume", *extra)) == 1


def test_moses_ini_gets_the_pass_keep_chooses(tiny_model_dir, tiny_dev, tmp_path):
    """--keep best-dev (the default): the pass with the highest dev corpus BLEU; best-sentence-bleu: the highest
    averaged sentence BLEU+1; last. Choosing again on a finished run (--resume) decodes nothing more."""
    extra = ("--n-best-size", "3", "--reordering", "mon-swap", "--sgd-passes", "5", "--learning-rate", "0.01")
    out = tmp_path / "run"
    assert main(tune_args(tiny_model_dir, tiny_dev, out, "perceptron", 6, *extra)) == 0
    rows = [line.split("\t") for line in (out / "log.tsv").read_text().splitlines()]
    sentence, corpus = (np.array([float(r[rows[0].index(c)]) for r in rows[1:]]) for c in ("dev_sentence_bleu",
                                                                                            "dev_bleu"))
    layout = FeatureLayout.from_config(MosesConfig.read(out / "moses.ini"))

    def kept() -> np.ndarray:
        return layout.weights(MosesConfig.read(out / "moses.ini"))

    def decoded(number: int) -> np.ndarray:
        return layout.weights(MosesConfig.read(out / f"run{number}.moses.ini"))

    np.testing.assert_array_equal(kept(), decoded(int(np.argmax(corpus)) + 1))
    for keep, number in (("best-sentence-bleu", int(np.argmax(sentence)) + 1), ("last", 6)):
        assert main(tune_args(tiny_model_dir, tiny_dev, out, "perceptron", 6, "--resume", "--keep", keep,
                              *extra)) == 0
        np.testing.assert_array_equal(kept(), decoded(number))
    assert len((out / "log.tsv").read_text().splitlines()) == 7


def test_the_loop_refuses_a_relevant_set_keep(tiny_model_dir, tiny_dev, tmp_path, capsys):
    argv = tune_args(tiny_model_dir, tiny_dev, tmp_path / "run", "mert", 2, "--keep", "best-sentence-bleu")
    argv = argv[:-4] + argv[-2:]  # without --passes, which MERT refuses
    assert main(argv) == 2
    assert "--keep best-sentence-bleu is for costmargin and perceptron" in capsys.readouterr().err


def test_a_short_costmargin_run_beats_the_flat_weights(bible, tmp_path):
    argv = ["tune", "-q", "-f", str(bible / "model" / "moses.ini"), "--src", str(bible / "dev.tok.es"),
            "--refs", str(bible / "dev.tok.en"), "--out", str(tmp_path), "--sentences", "8",
            "--algorithm", "costmargin", "--passes", "6", "--reordering", "mon-swap"]
    assert main(argv) == 0
    rows = [line.split("\t") for line in (tmp_path / "log.tsv").read_text().splitlines()[1:]]
    flat = float(rows[0][2])
    trained = max(float(r[2]) for r in rows[2:])
    assert trained > flat
    assert (tmp_path / "dev-bleu.png").exists() and (tmp_path / "run6.moses.ini").exists()
    log = read_tuning_log(tmp_path / "log.tsv", [RELEVANT_SET_LOG])
    assert log.step_name == "pass" and log.steps.tolist() == [1, 2, 3, 4, 5, 6] and log.pool_bleu is not None


def test_sparse_costmargin_epoch_equals_the_dense_one():
    rng = np.random.default_rng(4)
    pool = _random_pool(rng)
    x, b = pool.features, sentence_bleu_plus1(pool.stats)
    n, d = x.shape
    dense_w = np.zeros(d)
    sparse_v = np.zeros(d)
    ptr = np.arange(0, n * d + 1, d, dtype=np.int64)
    ids = np.tile(np.arange(d, dtype=np.int64), n)
    base = np.zeros(n)
    for _ in range(5):
        order = rng.permutation(pool.n_sentences)
        a = costmargin_epoch(order, pool.offsets, x, b, pool.offsets, x, b, dense_w, 0.05)
        c = sparse_costmargin_epoch(order, pool.offsets, ptr, ids, x.ravel(), base, b, pool.offsets, ptr, ids,
                                    x.ravel(), base, b, sparse_v, 0.05)
        assert a == c
    np.testing.assert_allclose(sparse_v, dense_w, atol=1e-12)
    assert np.any(dense_w != 0)


def test_binary_training_resumes_to_the_uninterrupted_weights(tiny_model_dir, tiny_dev, tmp_path):
    extra = ("--features", "binary", "--sgd-passes", "5", "--learning-rate", "0.01", "--oracle-beam", "20")
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "full", "costmargin", 3, *extra)) == 0
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "parts", "costmargin", 2, *extra)) == 0
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "parts", "costmargin", 3, "--resume", *extra)) == 0
    assert_resumed_as_uninterrupted(tmp_path / "parts", tmp_path / "full",
                                    ("sparse-weights.txt", "pass3/sparse-weights.txt"))
    rows = [line.split("\t") for line in (tmp_path / "full" / "log.tsv").read_text().splitlines()]
    assert [row[1] for row in rows] == ["decoded_weights_file"] + [f"pass{k}/sparse-weights.txt" for k in (1, 2, 3)]
    weights = SparseModel.read(tmp_path / "full").blocks
    assert int(rows[-1][4]) > 0 and len(weights) > 0 and all(name.split(":")[0] in ("blk", "w", "len", "ori", "bi")
                                          for name in weights.weight)
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "p", "perceptron", 3, *extra)) == 2


def test_the_binary_training_folder_translates_as_the_in_process_decoder(tiny_model_dir, tiny_dev, tmp_path):
    """pbmt translate -f OUT/moses.ini (no flags) decodes MON/SWAP with the learned block weights."""
    extra = ("--features", "binary", "--sgd-passes", "5", "--learning-rate", "0.05", "--oracle-beam", "20")
    assert main(tune_args(tiny_model_dir, tiny_dev, tmp_path / "bin", "costmargin", 3, *extra)) == 0
    assert main(["translate", "-q", "-f", str(tmp_path / "bin" / "moses.ini"), "-i", str(tiny_dev / "dev.src"),
                 "-o", str(tmp_path / "out.txt"), "--tokenized"]) == 0
    dense = TranslationModel.load(tiny_model_dir / "moses.ini")
    blocks = SparseModel.read(tmp_path / "bin").blocks
    assert len(blocks) > 0
    weights = np.array(list(blocks.weight.values()))
    texts = {}
    for name, block_weights in (("trained", weights), ("zero", np.zeros(len(weights)))):
        model = dataclasses.replace(dense, settings=dataclasses.replace(dense.settings, reordering="mon-swap"),
                                    sparse=SparseModel.of_blocks(BlockWeights(list(blocks.weight), block_weights)))
        texts[name] = []
        for line in (tiny_dev / "dev.src").read_text().splitlines():
            options = TranslationOptions.build(model, model.vocab.ids(line.split()))
            texts[name].append(" ".join(model.vocab.words(decode(model, options)[0].derivation.target_words(options))))
    assert (tmp_path / "out.txt").read_text().splitlines() == texts["trained"]
    best = max(range(1, 4), key=lambda k: float((tmp_path / "bin" / "log.tsv").read_text().splitlines()[k].split("\t")[2]))
    assert (tmp_path / "bin" / f"pass{best}" / "sparse-weights.txt").read_text() == \
        (tmp_path / "bin" / "sparse-weights.txt").read_text()  # every pass is a model folder; the best is OUT
    assert texts["trained"] != texts["zero"]  # the weights matter
    # the folder's model travels to a worker as its path: its block weights are read there, not shipped
    folder_model = TranslationModel.load(tmp_path / "bin" / "moses.ini")
    arrived = pickle.loads(pickle.dumps(folder_model))
    assert len(pickle.dumps(folder_model)) < 2000 and arrived.sparse.blocks.weight == blocks.weight
    tuned = dataclasses.replace(folder_model, sparse=SparseModel.of_blocks(BlockWeights(list(blocks.weight), weights)))
    assert pickle.loads(pickle.dumps(tuned)).sparse.blocks.weight == blocks.weight  # other weights: shipped
