import pytest

from pbmt.cli import main

SOURCES = "a b c\nc a e b\nb x a d\n\ne d c b a\n"


def sample(tiny_model_dir, tmp_path, name, *extra):
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    out = tmp_path / name
    code = main(["sample", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o", str(out), *extra])
    return code, out.read_text().splitlines() if out.exists() else None


def test_annealed_sampling_finds_the_decoders_translations(tiny_model_dir, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text(SOURCES)
    assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                 "-o", str(tmp_path / "decoded")]) == 0
    code, out = sample(tiny_model_dir, tmp_path, "sampled", "--iterations", "3000", "--anneal", "1", "0.02")
    assert code == 0 and out == (tmp_path / "decoded").read_text().splitlines()
    assert out[3] == "" and "x" in out[2].split()
    code, greedy = sample(tiny_model_dir, tmp_path, "greedy", "--init", "decoder", "--temperature", "0",
                          "--iterations", "50")
    assert code == 0 and greedy == out


def test_output_depends_on_the_seed_only(tiny_model_dir, tmp_path):
    args = ["--iterations", "400", "--temperature", "3", "--decision", "max-translation", "--burn-in", "100"]
    runs = [sample(tiny_model_dir, tmp_path, f"out{i}", *args, "--workers", str(workers))
            for i, workers in enumerate((1, 2, 1))]
    assert all(code == 0 for code, _ in runs)
    assert runs[0][1] == runs[1][1] == runs[2][1] and len(runs[0][1]) == 5


@pytest.mark.parametrize("args,message", [
    (["--decision", "max-derivation", "--iterations", "100", "--burn-in", "100"], "burn-in"),
    (["--anneal", "1", "0"], "positive"),
    (["--iterations", "0"], "at least 1"),
])
def test_bad_arguments(tiny_model_dir, tmp_path, capsys, args, message):
    code, _ = sample(tiny_model_dir, tmp_path, "out", *args)
    assert code == 1 and message in capsys.readouterr().err


def test_temperature_and_anneal_exclude_each_other(tiny_model_dir, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        sample(tiny_model_dir, tmp_path, "out", "--temperature", "1", "--anneal", "1", "0.1")
    assert exit_.value.code == 2
