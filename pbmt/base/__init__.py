"""The base layer: word ids, checked reading and atomic writing, errors, CSR arrays, the hash table the model's,
the metrics' and training's kernels share, plain text to tokens (protected tokens, placeholders, markup,
documents), moses.ini, the Moses n-best format, the parallel map, run folders, feature labels, figures, and
the stamp that keeps numba's cache of every kernel fresh."""
