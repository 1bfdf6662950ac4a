"""Pick-to-pack buffer capacity check used before wave release."""
