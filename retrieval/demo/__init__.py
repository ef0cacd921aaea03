"""Pure: the synthetic demo world (scene ground truth, rendered clips, caption grammar), in files
and plain data; :mod:`retrieval.services.demo` writes it to the database."""
