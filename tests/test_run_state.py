"""RunFolder: one checkpoint and log for every tuner; resuming only the same run on inputs of the same content."""

import json

import numpy as np
import pytest

from pbmt.commands.cli import main
from pbmt.base.errors import PbmtError
from pbmt.base.run_state import CHECKPOINT, LOG, RunFolder, generator_state, restored_generator, tuning_inputs

COLUMNS = ("step", "decoded_weights", "dev_bleu")


def folder(out, resume=False, kind="loop", settings=None, inputs=None):
    return RunFolder(out, kind, COLUMNS, {"seed": 1, "n": [1, 2]} if settings is None else settings,
                     {"references": "ab12"} if inputs is None else inputs, resume)


def test_a_saved_run_resumes_with_its_arrays_state_and_log(tmp_path):
    run = folder(tmp_path)
    assert run.resumed is None
    rng = np.random.default_rng(5)
    rng.random(3)
    run.save({"weights": np.array([0.5, -1.0])}, {"rng": generator_state(rng), "records": [1]},
             [[1, "LM0= 0.5", "20.0000"]])
    assert (tmp_path / LOG).read_text() == "step\tdecoded_weights\tdev_bleu\n1\tLM0= 0.5\t20.0000\n"
    again = folder(tmp_path, resume=True)
    np.testing.assert_array_equal(again.resumed.arrays["weights"], [0.5, -1.0])
    assert again.resumed.state["records"] == [1] and again.rows == [["1", "LM0= 0.5", "20.0000"]]
    assert restored_generator(again.resumed.state["rng"]).random() == rng.random()
    with pytest.raises(ValueError, match="2 fields for 3 columns"):
        again.save({}, {}, [[1, 2]])


def test_a_run_is_resumed_only_when_asked_and_only_the_same_run(tmp_path):
    folder(tmp_path).save({}, {}, [])
    with pytest.raises(PbmtError, match="holds a tuning run .*pass --resume"):
        folder(tmp_path)
    with pytest.raises(PbmtError, match="it holds a loop run, not a samplerank one"):
        folder(tmp_path, resume=True, kind="samplerank")
    with pytest.raises(PbmtError, match=r"other settings: seed 1 there, 2 now"):
        folder(tmp_path, resume=True, settings={"seed": 2, "n": [1, 2]})
    with pytest.raises(PbmtError, match=r"the references differ in content from those the run started with; start "
                       "afresh in another folder"):
        folder(tmp_path, resume=True, inputs={"references": "cd34"})
    with pytest.raises(PbmtError, match=r"the dev source differ"):
        folder(tmp_path, resume=True, inputs={"references": "ab12", "dev source": "ef"})
    assert folder(tmp_path, resume=True).resumed is not None


def test_a_run_named_as_its_command_line_names_it_is_resumed_only_under_that_name(tmp_path):
    RunFolder(tmp_path, "loop", COLUMNS, {"seed": 1}, called="--algorithm mert").save({}, {}, [])
    for kind, called in (("samplerank", "--algorithm samplerank"), ("loop", "--algorithm pro")):
        with pytest.raises(PbmtError, match=f"it holds a run of --algorithm mert, not of {called}; resume it with "
                                            "--algorithm mert, or start afresh in another folder"):
            RunFolder(tmp_path, kind, COLUMNS, {"seed": 1}, resume=True, called=called)
    assert RunFolder(tmp_path, "loop", COLUMNS, {"seed": 1}, resume=True, called="--algorithm mert").resumed
    with pytest.raises(PbmtError, match="it holds a loop run, not a samplerank one"):  # a run named by no one
        RunFolder(tmp_path, "samplerank", COLUMNS, {"seed": 1}, resume=True)


@pytest.mark.parametrize("content, message", [
    (None, "a checkpoint of an older pbmt, which this one cannot resume; start afresh"),
    (2, "a checkpoint of an older pbmt, which this one cannot resume; start afresh"),
    (b"", "corrupt checkpoint"), (b"PK\x03\x04 not a zip", "corrupt checkpoint")])
def test_an_old_or_corrupt_checkpoint_is_one_error_naming_it(tmp_path, content, message):
    path = tmp_path / CHECKPOINT
    if content is None:  # the format tuners wrote before the run folder: arrays and a "state" record
        with open(path, "wb") as handle:
            np.savez(handle, weights=np.zeros(3), state=np.frombuffer(b"{}", np.uint8))
    elif isinstance(content, int):  # a run record of an earlier format
        run = {"format": content, "kind": "loop", "settings": {"seed": 1, "n": [1, 2]}, "inputs": {}, "state": {},
               "log": []}
        with open(path, "wb") as handle:
            np.savez(handle, run=np.frombuffer(json.dumps(run).encode(), np.uint8))
    else:
        path.write_bytes(content)
    with pytest.raises(PbmtError, match=message) as error:
        folder(tmp_path, resume=True)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_an_older_samplerank_folder_is_not_resumed_from_scratch(tmp_path):
    (tmp_path / "samplerank.npz").write_bytes(b"")
    with pytest.raises(PbmtError, match="samplerank.npz: a checkpoint of an older pbmt"):
        folder(tmp_path, resume=True, kind="samplerank")
    assert folder(tmp_path, kind="samplerank").resumed is None  # without --resume: a fresh run, as asked


def test_pbmt_tune_refuses_to_resume_on_changed_references(tiny_model_dir, tiny_dev, tmp_path, capsys):
    refs = tmp_path / "dev.ref"
    lines = (tiny_dev / "dev.ref").read_text().splitlines()
    refs.write_text("\n".join(lines) + "\n")
    argv = ["tune", "-q", "-f", str(tiny_model_dir / "moses.ini"), "--src", str(tiny_dev / "dev.src"), "--refs",
            str(refs), "--out", str(tmp_path / "run"), "--n-best-size", "5", "--iterations", "1", "--restarts", "1"]
    assert main(argv) == 0
    recorded = tuning_inputs(tiny_model_dir / "moses.ini", tiny_dev / "dev.src", refs)
    refs.write_text("\n".join([lines[1], lines[0]] + lines[2:]) + "\n")  # same length, other content
    capsys.readouterr()
    assert main([*argv[:-4], "--iterations", "2", "--restarts", "1", "--resume"]) == 1
    err = capsys.readouterr().err
    assert "cannot resume: the references differ in content" in err and len(err.strip().splitlines()) == 1
    assert tuning_inputs(tiny_model_dir / "moses.ini", tiny_dev / "dev.src", refs) != recorded
