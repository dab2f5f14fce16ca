"""Word alignment of a tokenised parallel corpus with eflomal, in both directions.

eflomal (Östling & Tiedemann 2016, "Efficient word alignment with Markov
Chain Monte Carlo") samples an IBM1 -> HMM -> HMM+fertility model and writes
two alignments: ``fwd`` links each target word to at most one source word,
``rev`` each source word to at most one target word, both as ``i-j`` with
source position ``i`` and target position ``j``. Symmetrise them with
``pbmt.train.symmetrize``.

eflomal seeds its sampler from the operating system and has no seed option,
so two runs give slightly different alignments.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from pbmt.base.errors import PbmtError
from pbmt.train.corpus import Alignment, Corpus, read_alignment


def _eflomal_line(words: list[str]) -> str:
    """A sentence as eflomal reads it: it splits at every kind of white space, so one inside a token (a no-break
    space, which pbmt's tokens keep) becomes U+2581, or eflomal would count more words than the corpus has."""
    return _SPACE_IN_TOKEN.sub("\u2581", " ".join(words)) + "\n"


_SPACE_IN_TOKEN = re.compile(r"[^\S ]")


def eflomal_align(
    src: Corpus,
    tgt: Corpus,
    model: int = 3,
    n_samplers: int = 3,
    rel_iterations: float = 1.0,
    null_prior: float = 0.2,
    quiet: bool = True,
) -> tuple[Alignment, Alignment]:
    """(fwd, rev) alignments of the sentence pairs of ``src`` and ``tgt``.

    ``model``: 1 IBM1, 2 HMM, 3 HMM with fertility; ``n_samplers``: independent
    samplers whose counts are averaged; ``rel_iterations``: iterations relative
    to eflomal's default (which grows as the corpus shrinks); ``null_prior``:
    prior probability of a NULL link. eflomal lowercases words itself.
    """
    try:
        import eflomal
    except ImportError:
        raise PbmtError("word alignment needs eflomal: pip install eflomal") from None
    if len(src) != len(tgt):
        raise PbmtError(f"align: {len(src)} source sentences but {len(tgt)} target sentences")
    aligner = eflomal.Aligner(model=model, n_samplers=n_samplers, rel_iterations=rel_iterations, null_prior=null_prior)
    with tempfile.TemporaryDirectory(prefix="pbmt-align-") as tmp:
        fwd_path, rev_path = Path(tmp) / "fwd", Path(tmp) / "rev"
        aligner.align(
            [_eflomal_line(src.sentence(s)) for s in range(len(src))],
            [_eflomal_line(tgt.sentence(s)) for s in range(len(tgt))],
            links_filename_fwd=str(fwd_path),
            links_filename_rev=str(rev_path),
            quiet=quiet,
        )
        return read_alignment(fwd_path, src, tgt), read_alignment(rev_path, src, tgt)
