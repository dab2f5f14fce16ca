"""Tuning: n-best pools and the optimisers that learn feature weights from them."""
