"""The active policy live: stages of queries drawn with known probabilities and judged in full,
and the active-inference estimates they give every score (:mod:`.stages`); its offline replay
is :mod:`annotation.simulation.active`."""
