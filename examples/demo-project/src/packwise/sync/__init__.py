"""Handheld sync endpoint."""
