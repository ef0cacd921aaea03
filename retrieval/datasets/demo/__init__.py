"""Pure: the synthetic demo world (scene ground truth, rendered clips, caption grammar), in files
and plain data; :mod:`retrieval.datasets.demo.service` writes it to the database."""
