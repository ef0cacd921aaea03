"""Video files as benchmarks ship them: probing, browser copies, segment clips and posters.

:mod:`retrieval.media.probe` and :mod:`retrieval.media.transcode` are pure (a path in, facts
or a file out); :mod:`retrieval.media.service` keeps their results in the database.
"""
