"""What test modules import by name (pytest's fixtures stay in ``conftest.py``): a module of its own, since
two ``conftest.py`` files (``tests/`` and ``tests/train/``) cannot both be imported as ``conftest`` in one run."""

import numpy as np
import pytest


def write_moses_ini(folder, features, distortion_limit: int):
    """Write ``folder / "moses.ini"``: its ``[distortion-limit]``, then each of ``features`` (its ``[feature]``
    line, its weights as text) with its ``[weight]`` line under the name Moses gives it (its ``name=``, else its
    type and 0). Returns the path."""
    names = [next((word[5:] for word in line.split()[1:] if word.startswith("name=")), line.split()[0] + "0")
             for line, _ in features]
    path = folder / "moses.ini"
    path.write_text(f"[distortion-limit]\n{distortion_limit}\n\n[feature]\n"
                    + "".join(f"{line}\n" for line, _ in features) + "\n[weight]\n"
                    + "".join(f"{name}= {weights}\n" for name, (_, weights) in zip(names, features)))
    return path


TINY_SOURCES = ["a b c", "c a e b", "b d a", "e d c b a", "d e", "a c e", "b b c d", "e a"]
"""Sentences of the tiny model's source vocabulary (``tiny_model_dir``), small enough to enumerate."""


def assert_reproduces_moses(entry, options, model):
    """The features and total ``score_derivation`` gives the derivation of a Moses n-best entry equal Moses's
    (printed to six significant digits); returns the derivation."""
    from pbmt.search.derivation import score_derivation
    from pbmt.search.output import derivation_from_entry

    derivation = derivation_from_entry(entry, options, model)
    features = score_derivation(derivation, options, model)
    ours = model.layout.as_dict(features)
    for name, values in entry.features.items():
        np.testing.assert_allclose(ours[name], values, rtol=1e-5, atol=1e-3, err_msg=f"{entry.sentence} {name}")
    assert features @ model.weights == pytest.approx(entry.total, abs=1e-3)
    return derivation


def moses_nbest(moses, folder, sentences, out, size=10):
    """Moses 1 (``moses``: its binary) run in ``folder`` on its ``moses.ini`` over ``sentences``: the ``size``-best
    entries of each sentence (``pbmt.base.nbest`` entries, with segmentation), one list per sentence, written
    to the file ``out`` first."""
    import itertools
    import subprocess

    from pbmt.base.nbest import read_nbest

    subprocess.run([str(moses), "-f", "moses.ini", "-v", "0", "-n-best-list", str(out), str(size),
                    "-include-segmentation-in-n-best", "true"], input="\n".join(sentences) + "\n", text=True,
                   cwd=folder, check=True, capture_output=True)
    groups = [list(g) for _, g in itertools.groupby(read_nbest(out), key=lambda e: e.sentence)]
    assert len(groups) == len(sentences)
    return groups
