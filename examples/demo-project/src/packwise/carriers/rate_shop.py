"""Parallel carrier quote fan-out with a time budget and quote cache."""
