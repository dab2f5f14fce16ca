import subprocess
import sys

RUN = """import gc, sys
from pbmt.commands.cli import main
codes = [main(sys.argv[1:]) for _ in range(2)]  # the first may compile kernels: the second loads them
print(max(codes), gc.isenabled(), gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_a_run_leaves_its_imports_and_model_out_of_the_collectors_sight(tiny_model_dir, tmp_path):
    """The objects of the imports and the model, which last the run, are frozen before the decoding: the
    collector (on, for what the decoding makes) walks a fraction of them in its passes, the exit's last (in
    a second run in the same process, whose kernels are compiled)."""
    src = tmp_path / "in.txt"
    src.write_text("a b c\nc a e b\n")
    shown = subprocess.run([sys.executable, "-c", RUN, "translate", "-q", "-f", str(tiny_model_dir / "moses.ini"),
                            "-i", str(src), "-o", str(tmp_path / "out"), "--n-best", str(tmp_path / "nbest"),
                            "--threads", "2"], capture_output=True, text=True, check=True).stdout.split()
    code, enabled, frozen, tracked = int(shown[0]), shown[1] == "True", int(shown[2]), int(shown[3])
    assert code == 0 and enabled
    assert frozen > 20_000 and tracked < frozen / 10
    assert len((tmp_path / "out").read_text().splitlines()) == 2
