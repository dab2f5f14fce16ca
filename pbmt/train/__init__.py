"""Training: from a parallel corpus to model files."""
