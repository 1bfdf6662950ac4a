"""Raw ZPL printing over TCP 9100 and printer heartbeat checks."""
