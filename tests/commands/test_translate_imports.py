"""What a plain ``pbmt translate`` loads before its first sentence: not SciPy's linear algebra (numba's check
for a BLAS, ``pbmt.base.numba_blas``) and not the searches only other options use (forced and prefix
decoding, lattices, document decoding, the Python API's explanations): each was start-up time every run paid."""

from __future__ import annotations

import json
import subprocess
import sys

NOT_LOADED = ("scipy.linalg", "pbmt.search.forced", "pbmt.search.lattice", "pbmt.search.document_decoder",
              "pbmt.search.sampler", "pbmt.search.explain", "pbmt.api")

RUN = """
import json, sys
from pbmt.commands.cli import main

code = main(["translate", "-q", "-i", sys.argv[1], "-o", sys.argv[2]])
print(json.dumps({"code": code, "loaded": sorted(sys.modules)}))
"""


def test_a_plain_translate_loads_no_other_search_and_no_linear_algebra(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("la casa\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", RUN, str(source), str(tmp_path / "out.txt")], check=True,
                         capture_output=True, text=True)
    found = json.loads(run.stdout.splitlines()[-1])
    assert found["code"] == 0 and (tmp_path / "out.txt").read_text(encoding="utf-8").strip()
    assert "pbmt.search.decoder" in found["loaded"] and "numba.np.arraymath" in found["loaded"]  # it did decode
    assert [m for m in NOT_LOADED if m in found["loaded"]] == []
