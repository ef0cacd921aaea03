"""Video files as benchmarks ship them: probing, browser copies, segment clips and posters
(``probe`` and ``transcode`` are pure; ``service`` keeps their results in the database)."""
