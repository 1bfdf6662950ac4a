"""Redis Streams job queue backed by Postgres job rows."""
