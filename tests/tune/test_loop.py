"""The tuning loop on a fake decoder: each sentence has a fixed universe of candidates."""

from dataclasses import replace

import numpy as np
import pytest

from pbmt.base.config import MosesConfig
from pbmt.base.errors import PbmtError
from pbmt.metrics.bleu import corpus_bleu, segment_stats
from pbmt.model.features import FeatureLayout
from pbmt.base.run_state import CHECKPOINT
from pbmt.tune.apro import Apro
from pbmt.tune.listnet import ListNet
from pbmt.tune.loop import LoopSettings, tune
from pbmt.tune.mert import Mert
from pbmt.base.nbest import NBestEntry
from pbmt.tune.pool import References
from pbmt.tune.pro import Pro
from resumption import assert_resumed_as_uninterrupted

WORDS = "the lord said unto moses and house of israel go".split()


class FakeDecoder:
    """The n best of each sentence's fixed candidates under the weights; counts its calls."""

    def __init__(self, layout: FeatureLayout, n_sentences=8, n_candidates=25, n_best=5, seed=0):
        rng = np.random.default_rng(seed)
        self.layout = layout
        self.n_best = n_best
        self.features = rng.normal(size=(n_sentences, n_candidates, layout.size))
        self.features[:, :, layout.columns("UnknownWordPenalty0")] = 0.0
        self.texts = [[" ".join(rng.choice(WORDS, size=int(rng.integers(2, 9)))) for _ in range(n_candidates)]
                      for _ in range(n_sentences)]
        self.references = [" ".join(rng.choice(WORDS, size=6)) for _ in range(n_sentences)]
        self.calls = 0

    def __call__(self, weights):
        self.calls += 1
        out = []
        for s, (features, texts) in enumerate(zip(self.features, self.texts)):
            scores = features @ weights
            best = np.argsort(-scores, kind="stable")[:self.n_best]
            out.append(tuple(NBestEntry(s, texts[c], self.layout.as_dict(features[c]), float(scores[c]),
                                        ((0, 1, 0, len(texts[c].split())),)) for c in best))
        return out


@pytest.fixture
def config(tiny_model_dir):
    return MosesConfig.read(tiny_model_dir / "moses.ini")


@pytest.fixture
def layout(config):
    return FeatureLayout.from_config(config)


def run(decoder, config, layout, out, resume=False, seed=1, optimizer=None, inputs=None, **settings):
    settings.setdefault("weight_tolerance", 0.0)  # run to the iteration limit unless a test says otherwise
    return tune(decoder, References(decoder.references), config, layout,
                optimizer or Mert(restarts=3, random_directions=2), out,
                LoopSettings(n_best=decoder.n_best, seed=seed, **settings), resume=resume, inputs=inputs)


def test_loop_writes_tuned_ini_log_plot_and_stops_at_its_limit(config, layout, tmp_path):
    decoder = FakeDecoder(layout)
    result = run(decoder, config, layout, tmp_path, max_iterations=3, output="last")
    assert decoder.calls == 3 and len(result.iterations) == 3
    assert result.stop_reason == "reached the iteration limit (3)"
    assert result.weights.tolist() == list(result.iterations[-1].new_weights) and result.decoded_in == 0
    tuned = MosesConfig.read(tmp_path / "moses.ini")
    assert layout.weights(tuned) == pytest.approx(result.weights, rel=1e-8)  # the ini has 9 digits
    assert tuned.weights["UnknownWordPenalty0"] == (1.0,)
    assert np.abs(result.weights).sum() == pytest.approx(2.0)  # L1 1 over the tuned, plus the fixed 1
    for k in (1, 2, 3):
        assert layout.weights(MosesConfig.read(tmp_path / f"run{k}.moses.ini")) == pytest.approx(
            result.iterations[k - 1].new_weights, rel=1e-8)
    log = (tmp_path / "log.tsv").read_text().splitlines()
    assert log[0].split("\t")[:3] == ["iteration", "decoded_weights", "dev_bleu"] and len(log) == 4
    assert (tmp_path / "dev-bleu.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sizes = [r.pool_size for r in result.iterations]
    assert sizes == sorted(sizes) and sizes[0] == 8 * 5
    # each iteration's dev BLEU is the decoder's 1-best under the weights it decoded with
    for r, previous in zip(result.iterations[1:], result.iterations):
        assert r.decoded_weights == previous.new_weights
        firsts = [entries[0].text for entries in decoder(np.array(r.decoded_weights))]
        assert r.dev_bleu == pytest.approx(corpus_bleu(segment_stats(firsts, [[x] for x in decoder.references])))
    assert result.iterations[0].decoded_weights == tuple(layout.weights(config))
    # the log says which weights were decoded for which dev BLEU, and which the optimiser proposed
    for line, r in zip(log[1:], result.iterations):
        fields = dict(zip(log[0].split("\t"), line.split("\t")))
        assert float(fields["dev_bleu"]) == pytest.approx(100 * r.dev_bleu, abs=1e-4)
        decoded = [float(v) for v in fields["decoded_weights"].split() if "=" not in v]
        proposed = [float(v) for v in fields["new_weights"].split() if "=" not in v]
        assert decoded == pytest.approx(r.decoded_weights, rel=1e-8)
        assert proposed == pytest.approx(r.new_weights, rel=1e-8)


def test_best_dev_output_keeps_the_weights_whose_decode_scored_best(config, layout, tmp_path):
    decoder = FakeDecoder(layout, seed=3)
    result = run(decoder, config, layout, tmp_path, max_iterations=4)
    decoded = [layout.weights(config)] + [np.array(r.new_weights) for r in result.iterations[:-1]]
    assert [list(r.decoded_weights) for r in result.iterations] == [list(w) for w in decoded]
    dev = [corpus_bleu(segment_stats([entries[0].text for entries in decoder(w)], [[x] for x in decoder.references]))
           for w in decoded]
    assert dev == pytest.approx([r.dev_bleu for r in result.iterations])
    best = max(range(4), key=lambda k: (dev[k], k))
    assert np.array_equal(result.weights, decoded[best]) and result.decoded_in == best + 1
    assert layout.weights(MosesConfig.read(tmp_path / "moses.ini")) == pytest.approx(decoded[best], rel=1e-8)
    assert result.best.iteration == best + 1  # what the closing line names
    with pytest.raises(PbmtError, match="unknown output choice"):
        LoopSettings(output="first")


def test_the_best_iteration_of_equal_dev_bleus_is_the_latest(config, layout, tmp_path):
    """The closing line's 'best dev BLEU at iteration k' names the kept weights' decode when two score the same."""
    result = run(FakeDecoder(layout, seed=3), config, layout, tmp_path, max_iterations=3)
    tied = [replace(r, dev_bleu=0.25) for r in result.iterations]
    assert replace(result, iterations=tuple(tied)).best is tied[-1]
    assert replace(result, iterations=tuple(tied[:2])).best is tied[1]
    assert replace(result, iterations=()).best is None


def test_loop_stops_when_the_pool_gains_nothing(config, layout, tmp_path):
    decoder = FakeDecoder(layout, n_candidates=6, n_best=6)
    result = run(decoder, config, layout, tmp_path, max_iterations=10)
    assert result.stop_reason == "the n-best lists added no new hypothesis to the pool"
    assert len(result.iterations) == 2 and result.iterations[1].new_candidates == 0
    assert result.iterations[1].optimize_seconds < 0.01
    assert np.array_equal(result.weights, np.array(result.iterations[0].new_weights))


def test_loop_stops_when_the_weights_stop_moving(config, layout, tmp_path):
    decoder = FakeDecoder(layout)
    result = run(decoder, config, layout, tmp_path, max_iterations=25, weight_tolerance=10.0)
    assert len(result.iterations) == 1 and result.stop_reason == "no weight moved by 10 or more"


class Interrupted(Exception):
    pass


class KilledDecoder(FakeDecoder):
    """A FakeDecoder whose ``kill_at``-th call raises, as a Ctrl-C during that iteration's decoding would."""

    def __init__(self, layout, kill_at):
        super().__init__(layout)
        self.kill_at = kill_at

    def __call__(self, weights):
        if self.calls + 1 == self.kill_at:
            raise Interrupted
        return super().__call__(weights)


OPTIMIZERS = {"mert": lambda: Mert(restarts=3, random_directions=2), "pro": lambda: Pro(samples=200, keep=20),
              "apro": Apro, "listnet": lambda: ListNet(epochs=5)}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_run_killed_in_an_iteration_resumes_to_the_uninterrupted_weights_and_log(config, layout, tmp_path, name):
    full = run(FakeDecoder(layout), config, layout, tmp_path / "full", max_iterations=4, optimizer=OPTIMIZERS[name]())
    assert len(full.iterations) == 4
    with pytest.raises(Interrupted):
        run(KilledDecoder(layout, 3), config, layout, tmp_path / "parts", max_iterations=4,
            optimizer=OPTIMIZERS[name]())
    decoder = FakeDecoder(layout)
    resumed = run(decoder, config, layout, tmp_path / "parts", resume=True, max_iterations=4,
                  optimizer=OPTIMIZERS[name]())
    assert decoder.calls == 2
    assert resumed.weights.tobytes() == full.weights.tobytes()
    assert [r.new_weights for r in resumed.iterations] == [r.new_weights for r in full.iterations]
    assert_resumed_as_uninterrupted(tmp_path / "parts", tmp_path / "full", ("moses.ini", "run4.moses.ini"))


def test_raising_the_iteration_limit_continues_a_finished_run(config, layout, tmp_path):
    full = run(FakeDecoder(layout), config, layout, tmp_path / "full", max_iterations=4)
    run(FakeDecoder(layout), config, layout, tmp_path / "parts", max_iterations=2)
    decoder = FakeDecoder(layout)
    resumed = run(decoder, config, layout, tmp_path / "parts", resume=True, max_iterations=4)
    assert decoder.calls == 2 and resumed.weights.tobytes() == full.weights.tobytes()
    assert_resumed_as_uninterrupted(tmp_path / "parts", tmp_path / "full")


def test_resuming_with_another_tuner_names_both_by_their_algorithm_names(config, layout, tmp_path):
    class RandomSearch(Mert):  # a tuner of one's own, whose class name is not its --algorithm name
        name = "random"

    run(FakeDecoder(layout), config, layout, tmp_path, max_iterations=1)
    with pytest.raises(PbmtError, match="it holds a run of --algorithm mert, not of --algorithm random; resume it "
                                        "with --algorithm mert, or start afresh"):
        run(FakeDecoder(layout), config, layout, tmp_path, resume=True, optimizer=RandomSearch(), max_iterations=2)
    run(FakeDecoder(layout), config, layout, tmp_path / "random", optimizer=RandomSearch(), max_iterations=1)
    with pytest.raises(PbmtError, match="it holds a run of --algorithm random, not of --algorithm pro"):
        run(FakeDecoder(layout), config, layout, tmp_path / "random", resume=True, optimizer=Pro(), max_iterations=2)


def test_a_checkpoint_of_an_older_pbmt_names_its_tuner_by_the_names_given(config, layout, tmp_path):
    """An older pbmt's record names its tuner by class alone: ``algorithm_names`` (the registry's, as ``pbmt
    tune`` passes them) say it by its --algorithm name, a class not among them by its class name."""
    import json

    from pbmt.tune.registry import algorithm_names

    run(FakeDecoder(layout), config, layout, tmp_path, max_iterations=1)
    with np.load(tmp_path / CHECKPOINT) as saved:
        arrays = dict(saved)
    record = json.loads(bytes(arrays.pop("run")))
    del record["called"]
    np.savez(tmp_path / CHECKPOINT, run=np.frombuffer(json.dumps(record).encode(), np.uint8), **arrays)

    def resume(names):
        return tune(FakeDecoder(layout), References(FakeDecoder(layout).references), config, layout, Pro(), tmp_path,
                    LoopSettings(n_best=FakeDecoder(layout).n_best, max_iterations=2), resume=True,
                    algorithm_names=names)

    with pytest.raises(PbmtError, match='other settings: --algorithm "mert" there, "pro" now'):
        resume(algorithm_names())
    with pytest.raises(PbmtError, match='other settings: --algorithm "Mert" there, "pro" now'):
        resume(None)


def test_an_existing_run_needs_resume_and_the_same_settings(config, layout, tmp_path):
    run(FakeDecoder(layout), config, layout, tmp_path, max_iterations=1)
    assert (tmp_path / CHECKPOINT).exists()
    with pytest.raises(PbmtError, match="pass --resume"):
        run(FakeDecoder(layout), config, layout, tmp_path, max_iterations=2)
    with pytest.raises(PbmtError, match="cannot resume: the run was started with other settings: seed 1 there, 2 now"):
        run(FakeDecoder(layout), config, layout, tmp_path, resume=True, seed=2, max_iterations=2)
    with pytest.raises(PbmtError, match="cannot resume: it holds a run of --algorithm mert, not of --algorithm "
                                        "costmargin"):
        from pbmt.tune.relevant_set import Costmargin, RelevantSetSettings, relevant_set_tune
        relevant_set_tune(FakeDecoder(layout), References(FakeDecoder(layout).references), config, layout,
                          Costmargin(), RelevantSetSettings(), tmp_path, resume=True)
    decoder = FakeDecoder(layout)
    assert len(run(decoder, config, layout, tmp_path, resume=True, max_iterations=1).iterations) == 1
    assert decoder.calls == 0


def test_a_sentence_without_translation_is_an_error(config, layout, tmp_path):
    decoder = FakeDecoder(layout)
    real = decoder.__call__

    def missing(weights):
        out = real(weights)
        out[3] = ()
        return out

    with pytest.raises(PbmtError, match="no translation of dev sentence"):
        tune(missing, References(decoder.references), config, layout, Mert(restarts=0), tmp_path,
             LoopSettings(n_best=5))
