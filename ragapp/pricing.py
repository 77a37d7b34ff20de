"""Estimated cost of a run, for the OpenAI models whose list prices we know.

Prices are US dollars per million tokens (input, output), as published by OpenAI; a model not in
the table (a local or self-hosted one) has no cost estimate rather than a wrong one.
"""

from ragapp.providers.registry import PROVIDERS

PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}


def estimate_cost(tokens: dict[str, dict[str, int]], *, provider: str) -> float | None:
    """Dollars for `tokens` ({model: {input, output}}); 0 for local models, None if unknown."""
    if PROVIDERS[provider].chat.runs_locally:
        return 0.0
    total = 0.0
    for model, counts in tokens.items():
        if model not in PRICES_PER_MILLION:
            return None
        price_in, price_out = PRICES_PER_MILLION[model]
        total += counts.get("input", 0) * price_in / 1e6 + counts.get("output", 0) * price_out / 1e6
    return round(total, 6)
