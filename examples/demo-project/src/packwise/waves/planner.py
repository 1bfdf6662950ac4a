"""Builds pick waves by carrier cutoff, then zone."""
