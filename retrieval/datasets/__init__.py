"""Datasets: what a benchmark holds, its imports and uploads, the name rule, captions' semantic roles and the demo world."""
