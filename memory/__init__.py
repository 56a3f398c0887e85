"""MUMA: multi-user, multi-agent long-term memory for AI agents."""

__version__ = "0.1.0"
