"""Pick-wave planning."""
