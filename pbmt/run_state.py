"""What a resumable run checks before it continues: the content of its inputs, and a readable checkpoint.

A tuning run's folder (``inputs.json``, ``guard_inputs``) or a translation's
journal (``pbmt translate``'s partial output) records the SHA-256 of what the
run read: the dev source and references, or the input text, and every file of
the model (``model_files``). A path names a file, not its content: an edited
references file of the same length, or a model retrained in the same folder,
must not be resumed from.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Iterator

from pbmt.config import MosesConfig
from pbmt.errors import PbmtError
from pbmt.files import atomic_write, file_digest

TOML = "pbmt.toml"


def model_files(ini: str | os.PathLike) -> list[Path]:
    """The files a model reads: its ``moses.ini``, every file a feature line names, ``pbmt.toml`` beside it and
    the files in that folder it names (sparse features' classes and weights)."""
    config = MosesConfig.read(ini)
    files = [Path(ini)] + [config.resolve(f.args["path"]) for f in config.features if "path" in f.args]
    toml = Path(ini).parent / TOML
    if toml.is_file():
        files.append(toml)
        for name in _quoted(toml.read_text(encoding="utf-8", errors="replace")):
            candidate = toml.parent / name
            if "/" not in name and candidate.is_file():
                files.append(candidate)
    return files


def _quoted(text: str) -> list[str]:
    return [part for i, part in enumerate(text.split('"')) if i % 2 == 1]


def digest_files(named: dict[str, str | os.PathLike | list]) -> dict[str, str]:
    """{name: SHA-256 hex} of each file (or of a list of files, hashed in order)."""
    out = {}
    for name, paths in named.items():
        paths = paths if isinstance(paths, list) else [paths]
        digest = hashlib.sha256()
        for path in paths:
            digest.update(file_digest(path).encode())
        out[name] = digest.hexdigest()
    return out


def digest_text(lines) -> str:
    """SHA-256 hex of lines of text (each ended by a newline)."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


INPUTS = "inputs.json"


def tuning_inputs(ini: str | os.PathLike, src: str | os.PathLike, refs: str | os.PathLike,
                  **others: str | os.PathLike | None) -> dict[str, str]:
    """Digests of a tuning run's inputs: the model's files, the dev source and references, and ``others``
    (e.g. a keys file; None ones are left out)."""
    files = {"model files": model_files(ini), "dev source": src, "references": refs}
    files.update({name.replace("_", " "): path for name, path in others.items() if path is not None})
    return digest_files(files)


def guard_inputs(out: str | os.PathLike, checkpoint: str | os.PathLike, inputs: dict[str, str],
                 resume: bool) -> None:
    """Refuse to resume ``checkpoint`` on inputs of other content than the run's; record them for a fresh run.

    A resumed run compares ``inputs`` with ``out/inputs.json``; a fresh run
    (no checkpoint yet) writes it. A folder holding a checkpoint but no
    resume is left alone: the tuner itself refuses to overwrite it.
    """
    out, checkpoint = Path(out), Path(checkpoint)
    record = out / INPUTS
    if not checkpoint.exists():
        with atomic_write(record) as handle:
            json.dump(inputs, handle, indent=1, sort_keys=True)
        return
    if not resume:
        return
    try:
        saved = json.loads(record.read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        raise PbmtError(f"{out}: cannot resume: {INPUTS}, the record of the run's inputs, is missing, so they "
                        "cannot be checked; start afresh in another folder") from None
    except (OSError, ValueError) as err:
        raise PbmtError(f"{record}: unreadable ({err}); start afresh in another folder") from None
    differ = [name for name in inputs if saved.get(name) != inputs[name]]
    if differ:
        raise PbmtError(f"{out}: cannot resume: the {', '.join(differ)} differ in content from those the run "
                        "started with; start afresh in another folder")


@contextlib.contextmanager
def reading_checkpoint(path: str | os.PathLike) -> Iterator[None]:
    """Turn any failure to read a checkpoint (truncated, not a zip, missing arrays, bad JSON) into one PbmtError."""
    try:
        yield
    except PbmtError:
        raise
    except (OSError, ValueError, KeyError, IndexError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise PbmtError(f"{path}: corrupt checkpoint ({type(err).__name__}: {err}); delete it to start the run "
                        "afresh") from None
