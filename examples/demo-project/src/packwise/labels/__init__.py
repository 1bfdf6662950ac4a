"""Label purchase and printing."""
