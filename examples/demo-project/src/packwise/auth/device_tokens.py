"""Short-lived signed device tokens for handhelds."""
