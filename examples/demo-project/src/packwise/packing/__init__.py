"""Packing station logic."""
