"""Pure: semantic-similarity proxies between captions (Wray et al., CVPR 2021, §4.4); the ORM side
is :mod:`retrieval.proxies.service`. Nothing heavy is imported: spaCy and NLTK load lazily."""

PROXIES: tuple[str, ...] = ("bow", "pos", "syn", "met")
PROXY_LABELS: dict[str, str] = {"bow": "BoW", "pos": "PoS", "syn": "SYN", "met": "METEOR"}
RELEVANCES: tuple[str, ...] = ("instance", *PROXIES)
"""Positives for training: a caption's own video only ("instance") or a thresholded proxy."""
