"""seal_hub: SEAL (co-evolving agents and learning environments) for LLM tool use, on TRL and the Hub."""

__version__ = "0.1.0"
