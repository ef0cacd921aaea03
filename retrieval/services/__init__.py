"""ORM-facing operations of the retrieval app, one module per idea.

Commands, views and the API call these; the pure modules they wrap (formats, demo,
metrics, ...) never touch the ORM.
"""
