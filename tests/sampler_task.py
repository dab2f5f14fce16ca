"""SampleRank fitted as the tests call it: on the sentences of a model, from the model's weights."""

from pbmt.tune.samplerank import SamplerTask
from pbmt.tune.tuner import TuningData


def fitted_on(tuner, model, sources, references, rng, **task):
    """``tuner`` fitted on a ``SamplerTask`` of ``model`` and the sentences (``task``: its other fields)."""
    task = SamplerTask(model, sources, references, **task)
    return tuner.fit(TuningData(sampler=task), task.start_weights, rng)
