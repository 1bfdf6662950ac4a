"""Postgres and Redis fixtures for the test suite."""
