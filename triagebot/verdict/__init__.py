"""Verdict stage: statistics and the confirm / no-repro / inconclusive decision."""
