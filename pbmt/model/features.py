"""The dense feature vector: which Moses feature owns which columns.

Feature values are natural logs (Moses's convention): ``LM0`` is KenLM's log10
score times ln 10, ``WordPenalty0`` is minus the number of target words,
``PhrasePenalty0`` the number of phrases, ``Distortion0`` minus the summed jump
widths, ``UnknownWordPenalty0`` -100 per unknown word, ``TranslationModel0``
and ``LexicalReordering0`` sums of the tables' log probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pbmt.base.config import MosesConfig


@dataclass(frozen=True)
class FeatureLayout:
    """Names and column ranges of the dense features, in moses.ini order."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    sizes: tuple[int, ...]

    @classmethod
    def from_config(cls, config: MosesConfig) -> "FeatureLayout":
        """The layout of a moses.ini's ``[feature]`` section."""
        return cls(
            tuple(f.name for f in config.features),
            tuple(f.type for f in config.features),
            tuple(f.n_scores for f in config.features),
        )

    @property
    def size(self) -> int:
        """Number of dense columns."""
        return sum(self.sizes)

    @cached_property
    def slices(self) -> tuple[tuple[str, slice], ...]:
        """(name, column range) of every feature, in order."""
        bounds = np.concatenate([[0], np.cumsum(self.sizes)]).tolist()
        return tuple((n, slice(bounds[i], bounds[i + 1])) for i, n in enumerate(self.names))

    def columns(self, name: str) -> slice:
        """Column range of feature ``name``."""
        start = 0
        for n, size in zip(self.names, self.sizes):
            if n == name:
                return slice(start, start + size)
            start += size
        raise KeyError(f"no feature named {name!r}; the features are {', '.join(self.names)}")

    def columns_of_type(self, type_: str) -> slice | None:
        """Column range of the (single) feature of a Moses type, or None."""
        names = [n for n, t in zip(self.names, self.types) if t == type_]
        return self.columns(names[0]) if names else None

    def weights(self, config: MosesConfig) -> np.ndarray:
        """The weight vector ``float64[size]`` of a moses.ini, in this layout."""
        return np.concatenate([np.asarray(config.weights[n], dtype=np.float64) for n in self.names])

    def as_dict(self, vector: np.ndarray) -> dict[str, tuple[float, ...]]:
        """A dense vector split by feature name."""
        values = np.asarray(vector, dtype=np.float64).tolist()
        return {n: tuple(values[columns]) for n, columns in self.slices}
