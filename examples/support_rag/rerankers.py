"""A reranker for `oloproof diagnose --intervention reranker --reranker rerankers:shortest_first`.

A reranker is any function ``(input, candidates) -> candidates``; Oloproof replays the recorded
retrieval through it (no new retrieval call) before assembling the context.
"""


def shortest_first(input, candidates):
    """Shorter passages first (stable for ties): keeps more of them within a token budget."""
    return sorted(candidates, key=lambda p: len((p.text or "").split()))
