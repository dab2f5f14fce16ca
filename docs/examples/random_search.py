from pbmt.tune.tuner import Group, Option, Tuner

RANDOM = Group("random search", "random steps around the weights decoded; the best on the pool is kept")


class RandomSearch(Tuner):
    name = "random-search"
    title = "random search"
    loop = "decode-optimise"
    reads = ("pool",)
    options = (Option(("--tries",), "random steps tried on each pool", "tries", RANDOM, type=int),
               Option(("--step",), "standard deviation of a step, per weight", "step", RANDOM, type=float))

    def __init__(self, tries: int = 20, step: float = 0.1):
        self.tries = tries
        self.step = step

    def fit(self, data, initial_weights, rng):
        pool, initial, tuned = self.checked_start(data, initial_weights)
        best, best_bleu = initial, pool.bleu(initial)
        for _ in range(self.tries):
            weights = initial + tuned * rng.normal(0.0, self.step, len(initial))
            if pool.bleu(weights) > best_bleu:
                best, best_bleu = weights, pool.bleu(weights)
        self.weights_ = best
        return self
