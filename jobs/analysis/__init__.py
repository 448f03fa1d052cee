"""Judgements of a run's numbers: steady state (pure: no Django)."""
