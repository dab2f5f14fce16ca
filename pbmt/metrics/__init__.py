"""Evaluation metrics: BLEU from sufficient statistics (``pbmt.metrics.bleu``)."""
