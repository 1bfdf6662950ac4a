"""Shared carrier HTTP client: timeouts, jittered backoff, Retry-After, circuit breaker."""
