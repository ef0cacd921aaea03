"""Search: a model's embeddings, faiss indexes and the runs (top-k videos per query caption) they give."""
