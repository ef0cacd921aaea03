"""Label sets: judged relevance of caption-video pairs from any source, stored, versioned, imported and merged."""
