"""Typed results as JSON-ready data: services return frozen dataclasses that templates read by
attribute, and JSON views, commands and jobs print the same objects' :meth:`JsonData.to_json`,
so a renamed field fails loudly in both places."""

from dataclasses import field, fields, is_dataclass

import numpy as np

OMIT_IF_NONE = "omit_if_none"


def omitted_if_none():
    """A dataclass field the JSON leaves out when it is None (a key present only sometimes)."""
    return field(metadata={OMIT_IF_NONE: True})


def plain(value):
    """numpy values, dicts, lists, tuples and dataclasses (a dict of their fields, less the
    :func:`omitted_if_none` ones that are None) as JSON-ready data; non-finite floats None."""
    if isinstance(value, np.ndarray | np.generic):  # a numpy scalar's tolist() is its item()
        return plain(value.tolist())
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        items = ((spec, getattr(value, spec.name)) for spec in fields(value))
        return {
            spec.name: plain(item)
            for spec, item in items
            if item is not None or not spec.metadata.get(OMIT_IF_NONE)
        }
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


class JsonData:
    """Mixin of typed results: :meth:`to_json` is what JSON views and commands print."""

    def to_json(self) -> dict:
        return plain(self)
