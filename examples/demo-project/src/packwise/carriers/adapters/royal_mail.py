"""Royal Mail adapter."""
