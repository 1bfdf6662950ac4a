"""Per-field merge against server revision numbers."""
