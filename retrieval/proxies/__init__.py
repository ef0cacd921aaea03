"""Semantic-similarity proxies between captions (Wray et al., seed 000 §4.4).

The package imports nothing heavy: spaCy and NLTK load only when a proxy is computed.
"""

PROXIES: tuple[str, ...] = ("bow", "pos", "syn", "met")
PROXY_LABELS: dict[str, str] = {"bow": "BoW", "pos": "PoS", "syn": "SYN", "met": "METEOR"}
RELEVANCES: tuple[str, ...] = ("instance", *PROXIES)
"""Positives for training: a caption's own video only ("instance") or a thresholded proxy."""
