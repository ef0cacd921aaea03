"""A campaign's relevance predictor: each pooled pair's cross-fitted probability of relevance
(:mod:`retrieval.prediction`) from what is known of it before judging, fitted on the
campaign's resolved labels in a background job and stored (:mod:`.service`; its pure part
:mod:`.inputs`)."""
