"""LLM bilateral bargaining with private information: environment, benchmark and training package

Modules:

- `bilateral.lab`: A browser lab: sessions of human participants who bargain against agents or each other, with consent, a comprehension check, payoffs, and the same store as a tournament."""

__version__ = "0.1.0"
