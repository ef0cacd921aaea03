"""ORM for the human side: campaigns, pairs and judgements (built in later issues)."""
