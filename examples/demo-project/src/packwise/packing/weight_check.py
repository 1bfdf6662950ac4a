"""Compares scale weight with expected weight before labelling."""
