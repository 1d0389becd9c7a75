"""LLM bilateral bargaining with private information: environment, benchmark and training package"""

__version__ = "0.1.0"
