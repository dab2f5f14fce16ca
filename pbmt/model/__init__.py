"""Model files: phrase tables, n-gram language models, their binary caches."""
