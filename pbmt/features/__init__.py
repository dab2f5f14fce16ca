"""Global (sentence- and document-level) features: one API and one registry (docs/global-features.md).

``pbmt.features.base`` says what a feature is and sees; ``registry`` names
them; the built-in kinds live one per module and register on import:
``lexical-consistency`` (document level), ``length-ratio``, ``repetition``,
``lm`` (a further LM) and ``consensus`` (n-best rescoring only).
"""

from pbmt.features.base import (Candidates, DocumentScores, GlobalFeature, Hypothesis, SentenceFeature,
                                feature_values)
from pbmt.features.registry import (KINDS, FeatureKind, FeatureSpec, build, name_features, parse_requests,
                                    read_weights, register, write_weights)
from pbmt.features import consensus, consistency, length_ratio, lm, repetition  # noqa: F401  (registers them)

__all__ = ["Candidates", "DocumentScores", "FeatureKind", "FeatureSpec", "GlobalFeature", "Hypothesis", "KINDS",
           "SentenceFeature", "build", "feature_values", "name_features", "parse_requests", "read_weights", "register",
           "write_weights"]
