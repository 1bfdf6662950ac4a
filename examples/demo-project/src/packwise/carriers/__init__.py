"""Carrier integrations and rate shopping."""
