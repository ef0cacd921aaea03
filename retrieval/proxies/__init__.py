"""Pure: semantic-similarity proxies between captions (Wray et al., CVPR 2021, §4.4).

Reading a split from the database, caching the matrices and scoring models by them is
:mod:`retrieval.proxies.service`. The package imports nothing heavy: spaCy and NLTK load
only when a proxy is computed.
"""

PROXIES: tuple[str, ...] = ("bow", "pos", "syn", "met")
PROXY_LABELS: dict[str, str] = {"bow": "BoW", "pos": "PoS", "syn": "SYN", "met": "METEOR"}
RELEVANCES: tuple[str, ...] = ("instance", *PROXIES)
"""Positives for training: a caption's own video only ("instance") or a thresholded proxy."""
