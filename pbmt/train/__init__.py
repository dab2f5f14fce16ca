"""Training: from a parallel corpus to model files."""

#: Longest phrase training extracts, in words: a phrase pair's word alignment is one 64-bit mask, a row of 8
#: bits per target word (``pbmt.train._extract_kernels``). Here, not beside the kernels, so that the verbs'
#: option ranges (``pbmt.commands.options``) read it without importing training.
MAX_SUPPORTED_LENGTH = 8
