"""context-keeper: durable project memory (decisions, pipelines, constraints) for coding agents."""

__version__ = "1.0.0"
