"""Semantic-similarity proxies between captions (Wray et al., seed 000 §4.4)."""
