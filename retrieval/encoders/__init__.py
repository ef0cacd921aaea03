"""Built-in retrieval models (encoders) and the video feature extractor."""
