"""Pre-commit check: applied migrations unchanged, CREATE INDEX uses CONCURRENTLY."""
