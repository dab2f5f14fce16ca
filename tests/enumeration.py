"""Brute-force enumeration of every derivation of a sentence in each search space, for exhaustive tests on
tiny inputs (independent of the search kernels)."""

import itertools

from pbmt.search.derivation import Derivation


def all_derivations(options, distortion_limit):
    """Every derivation Moses's distortion rules allow, by exhaustive recursion (independent of the kernel)."""
    n = options.n_words
    out = []

    def extend(covered, prev_end, chosen):
        if all(covered):
            out.append(list(chosen))
            return
        first_gap = covered.index(False)
        for start in range(n):
            if covered[start]:
                continue
            if distortion_limit >= 0 and abs(start - prev_end) > distortion_limit:
                continue
            for end in range(start + 1, min(n, start + options.max_length) + 1):
                if any(covered[start:end]):
                    break
                if distortion_limit >= 0 and start != first_gap and end - first_gap > distortion_limit:
                    continue
                for o in options.span(start, end):
                    now = covered[:start] + [True] * (end - start) + covered[end:]
                    extend(now, end, chosen + [o])

    extend([False] * n, 0, [])
    return [Derivation.from_options(options, c) for c in out]


def mon_swap_derivations(options):
    """Every MON/SWAP block sequence: a segmentation into phrases, some neighbour pairs swapped, any options."""
    n = options.n_words
    out = []

    def segmentations(start):
        if start == n:
            yield []
            return
        for end in range(start + 1, min(n, start + options.max_length) + 1):
            if len(options.span(start, end)):
                for rest in segmentations(end):
                    yield [(start, end)] + rest

    for spans in segmentations(0):
        k = len(spans)
        for swaps in itertools.product([False, True], repeat=max(0, k - 1)):
            if any(a and b for a, b in zip(swaps, swaps[1:])):
                continue  # a block is swapped with one neighbour at most
            order, i = [], 0
            while i < k:
                if i < k - 1 and swaps[i]:
                    order += [spans[i + 1], spans[i]]
                    i += 2
                else:
                    order.append(spans[i])
                    i += 1
            for chosen in itertools.product(*(options.span(s, e) for s, e in order)):
                out.append(Derivation.from_options(options, list(chosen)))
    return out
