"""Resumable runs: the content of their inputs, and the one run folder every tuner keeps its state in.

A tuning run's checkpoint (``RunFolder``) or a translation's journal (``pbmt
translate``'s partial output) records the SHA-256 of what the run read: the
dev source and references, or the input text, and every file of the model
(``model_files``). A path names a file, not its content: an edited
references file of the same length, or a model retrained in the same folder,
must not be resumed from.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from pbmt.base.config import MosesConfig
from pbmt.base.errors import PbmtError
from pbmt.base.files import atomic_write, file_digest, lock_folder

TOML = "pbmt.toml"


def model_files(config: MosesConfig) -> list[Path]:
    """The files a model (its ``moses.ini`` read) reads: the ini, every file a feature line or
    ``[weight-file]`` names, ``pbmt.toml`` beside it and the files in that folder it names (sparse features'
    classes and weights)."""
    ini = config.path
    files = [Path(ini)] + [config.resolve(f.args["path"]) for f in config.features if "path" in f.args]
    if config.weight_file is not None:
        files.append(config.weight_file)
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


def tuning_inputs(ini: str | os.PathLike, src: str | os.PathLike, refs: str | os.PathLike,
                  **others: str | os.PathLike | None) -> dict[str, str]:
    """Digests of a tuning run's inputs: the model's files, the dev source and references, and ``others``
    (e.g. a keys file; None ones are left out)."""
    files = {"model files": model_files(MosesConfig.read(ini)), "dev source": src, "references": refs}
    files.update({name.replace("_", " "): path for name, path in others.items() if path is not None})
    return digest_files(files)


CHECKPOINT = "checkpoint.npz"
LOG = "log.tsv"
FORMAT = 3  # of the checkpoint's "run" record: a checkpoint of another format (or none) is not resumed
OLD_SAMPLERANK_CHECKPOINT = "samplerank.npz"  # where an older pbmt's SampleRank kept its state


@dataclass(frozen=True)
class Checkpoint:
    """What a tuner saved after its last finished step: named ``arrays`` and a JSON-ready ``state`` (its
    scalars, random generator state and records), as it gave them to ``RunFolder.save``."""

    arrays: dict[str, np.ndarray]
    state: dict


class RunFolder:
    """The folder of one tuning run, the same for every tuner: its checkpoint and its log.

    ``checkpoint.npz`` holds, besides the tuner's arrays, one JSON record: the
    run's ``kind`` (which tuner), its ``settings`` (what the run must be
    resumed with: a resumed run with other settings would not reach the
    uninterrupted run's result), the SHA-256 of its ``inputs``
    (``tuning_inputs``: a path names a file, not its content), the tuner's
    state and the log's rows. ``save`` rewrites it atomically after every
    step, then ``log.tsv``: a header of ``columns`` (each tuner declares its
    columns once) and one row per step, so a resumed run's log is the
    uninterrupted run's.

    A folder holding a checkpoint is resumed only when asked (``resume``), and
    only when its kind, settings and inputs are those given; ``resumed`` is
    then its ``Checkpoint`` (None for a fresh run: no checkpoint yet, as after
    a run killed in its first step), which it says unless ``quiet``. Every refusal is one PbmtError naming the
    folder or the file and what differs. ``called``: the run's tuner as the command line names it
    (``--algorithm mert``), which the record keeps, so that a refusal to resume with another tuner names both
    so (a record without it, of an older pbmt, is named by its kind). ``said``: for a setting the user knows
    by another name, (that name, {stored value: what the user calls it}), which a refusal then says (a value
    not in it is said as stored).
    """

    def __init__(self, out: str | os.PathLike, kind: str, columns: Sequence[str], settings: dict,
                 inputs: dict[str, str] | None = None, resume: bool = False, quiet: bool = True,
                 said: Mapping[str, tuple[str, Mapping[str, str]]] | None = None, called: str | None = None):
        self.out = Path(out)
        lock_folder(self.out)  # a second tuner into this folder stops here, before it reads the checkpoint
        self.kind, self.columns, self.called = kind, tuple(columns), called
        self.settings = json.loads(json.dumps(settings, default=str))  # as it reads back from the checkpoint
        self.inputs = dict(inputs or {})
        self.said = dict(said or {})
        self.rows: list[list[str]] = []
        self.resumed: Checkpoint | None = None
        path = self.out / CHECKPOINT
        if resume and not path.exists() and (self.out / OLD_SAMPLERANK_CHECKPOINT).exists():
            raise PbmtError(f"{self.out / OLD_SAMPLERANK_CHECKPOINT}: a checkpoint of an older pbmt, which this one "
                            "cannot resume; start afresh in another folder")
        if path.exists():
            if not resume:
                raise PbmtError(f"{self.out} holds a tuning run ({CHECKPOINT}): pass --resume to continue it, or "
                                "choose another output folder")
            self.resumed = self._read(path)
            if not quiet:
                print(f"resuming the run in {self.out} after {self.columns[0]} {len(self.rows)}", file=sys.stderr)
        self.out.mkdir(parents=True, exist_ok=True)

    def _read(self, path: Path) -> Checkpoint:
        try:
            with np.load(path) as saved:
                record = json.loads(bytes(saved["run"]).decode("utf-8")) if "run" in saved.files else {}
                arrays = {name: np.array(saved[name]) for name in saved.files if name != "run"}
            if not isinstance(record, dict):
                raise ValueError("not a run record")
            if record.get("format") != FORMAT:
                which = "an older" if record.get("format", 0) < FORMAT else "another"
                raise PbmtError(f"{path}: a checkpoint of {which} pbmt, which this one cannot resume; start afresh in "
                                f"another folder (or delete {CHECKPOINT})")
            kind, settings, inputs, called = record["kind"], record["settings"], record["inputs"], record.get("called")
            rows, state = [list(map(str, row)) for row in record["log"]], record["state"]
        except PbmtError:
            raise
        except (OSError, ValueError, KeyError, IndexError, TypeError, EOFError, zipfile.BadZipFile) as err:
            raise PbmtError(f"{path}: corrupt checkpoint ({type(err).__name__}: {err}); delete it to start the run "
                            "afresh") from None
        _check_called(path, called, self.called)
        if kind != self.kind:
            raise PbmtError(f"{path}: cannot resume: it holds a {kind} run, not a {self.kind} one")
        differ = [name for name in sorted(set(inputs) | set(self.inputs)) if inputs.get(name) != self.inputs.get(name)]
        if differ:
            raise PbmtError(f"{self.out}: cannot resume: the {', '.join(differ)} differ in content from those the "
                            "run started with; start afresh in another folder")
        differ = [name for name in sorted(set(settings) | set(self.settings))
                  if settings.get(name) != self.settings.get(name)]
        if differ:
            name = differ[0]
            label, values = self.said.get(name, (name, {}))
            there, now = (values.get(v, v) if isinstance(v, str) else v
                          for v in (settings.get(name), self.settings.get(name)))
            raise PbmtError(f"{path}: cannot resume: the run was started with other settings: "
                            f"{label} {_shown(there)} there, {_shown(now)} now")
        self.rows = rows
        return Checkpoint(arrays, state)

    def save(self, arrays: dict[str, np.ndarray], state: dict, rows: Sequence[Sequence[str]]) -> None:
        """Rewrite the checkpoint (``arrays``, the JSON-ready ``state``, the log's ``rows``), then ``log.tsv``."""
        self.rows = [[str(value) for value in row] for row in rows]
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a log row of {len(row)} fields for {len(self.columns)} columns")
        record = {"format": FORMAT, "kind": self.kind, "settings": self.settings, "inputs": self.inputs,
                  "state": state, "log": self.rows, **({"called": self.called} if self.called is not None else {})}
        encoded = np.frombuffer(json.dumps(record).encode("utf-8"), dtype=np.uint8)
        with atomic_write(self.out / CHECKPOINT, "wb") as handle:
            np.savez(handle, run=encoded, **arrays)
        self.write_log(self.rows)

    def write_log(self, rows: Sequence[Sequence[str]]) -> None:
        """Rewrite ``log.tsv``: the header, then ``rows`` (fields without tabs or newlines)."""
        with atomic_write(self.out / LOG) as handle:
            handle.write("\t".join(self.columns) + "\n")
            handle.writelines("\t".join(map(str, row)) + "\n" for row in rows)


def _check_called(path: Path, there: str | None, now: str | None) -> None:
    """PbmtError when the checkpoint ``path`` holds a run of ``there`` and ``now`` is another (None: not known)."""
    if there is not None and now is not None and there != now:
        raise PbmtError(f"{path}: cannot resume: it holds a run of {there}, not of {now}; resume it with {there}, "
                        "or start afresh in another folder")


def check_resumable_by(out: str | os.PathLike, called: str) -> None:
    """Refuse at once (before a model loads) to resume the run in ``out`` with ``called`` when its checkpoint
    holds a run of another tuner, as ``RunFolder`` would; a missing or unreadable checkpoint is left to it."""
    path = Path(out) / CHECKPOINT
    try:
        with np.load(path) as saved:
            record = json.loads(bytes(saved["run"]).decode("utf-8"))
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return
    _check_called(path, record.get("called") if isinstance(record, dict) else None, called)


def kept_note(out: str | os.PathLike, resuming: bool) -> str:
    """What a tuning run that stopped (Ctrl-C, a full disk) leaves in its folder ``out``, said as a note of its
    error: the steps its checkpoint keeps (as its log's first column names them) and that the same command
    (``resuming``: with ``--resume``) goes on after them, or that no step finished."""
    out = Path(out)
    command = "the same command" if resuming else "the same command with --resume"
    try:
        with np.load(out / CHECKPOINT) as saved:
            steps = len(json.loads(bytes(saved["run"]).decode("utf-8"))["log"])
        unit = (out / LOG).read_text(encoding="utf-8").split("\t", 1)[0]
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return f"no step finished, nothing kept in {out}: the same command starts the run again"
    units = unit if steps == 1 else unit + ("es" if unit.endswith("s") else "s")
    return f"{steps} {units} kept in {out / CHECKPOINT}: {command} goes on after {'it' if steps == 1 else 'them'}"


def _shown(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def generator_state(rng: np.random.Generator) -> dict:
    """A random generator's state, JSON-ready, for ``restored_generator``."""
    return rng.bit_generator.state


def restored_generator(state: dict) -> np.random.Generator:
    """The generator whose ``generator_state`` was ``state``: it draws what the saved one would have."""
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    return rng
