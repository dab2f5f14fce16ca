"""Model files: phrase tables, n-gram language models, their binary caches."""

#: The highest n-gram order a language model may have: the ARPA reader keeps each n-gram's order in an int8
#: (``pbmt.model.lm``). Here, not in that module, so that the verbs' option ranges read it without its kernels.
MAX_ORDER = 127
