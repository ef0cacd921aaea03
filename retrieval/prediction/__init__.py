"""Pure: a relevance predictor for pooled (caption, video) pairs, the prediction side of active
statistical inference (Zrnic & Candès 2024; Angelopoulos et al. 2023): per-pair signals
(:mod:`.features`) and a cross-fitted, calibrated probability of relevance (:mod:`.model`)."""
