"""Scoring: metrics, estimation when judging stopped early, intervals, re-scoring, leaderboards, analyses and reports."""
