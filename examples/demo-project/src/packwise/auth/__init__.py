"""Device enrolment and token issuance."""
