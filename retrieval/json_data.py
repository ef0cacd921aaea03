"""Typed results as JSON-ready data: one path from a service's dataclasses to the JSON it prints.

Services return frozen dataclasses that templates read by attribute; JSON views, commands and
jobs call :meth:`JsonData.to_json` on the same objects, so a renamed field fails loudly in
both places instead of leaving a page blank.
"""

from dataclasses import field, fields, is_dataclass

import numpy as np

OMIT_IF_NONE = "omit_if_none"


def omitted_if_none():
    """A dataclass field the JSON leaves out when it is None (a key present only sometimes)."""
    return field(metadata={OMIT_IF_NONE: True})


def plain(value):
    """numpy arrays and scalars, dicts, lists, tuples and dataclasses as JSON-ready data.

    Dict keys become strings, tuples lists, non-finite floats None; a dataclass becomes a
    dict of its fields in declaration order, without the :func:`omitted_if_none` ones that
    are None.
    """
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        out = {}
        for spec in fields(value):
            item = getattr(value, spec.name)
            if item is None and spec.metadata.get(OMIT_IF_NONE):
                continue
            out[spec.name] = plain(item)
        return out
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


class JsonData:
    """Mixin of typed results: :meth:`to_json` is what JSON views and commands print."""

    def to_json(self) -> dict:
        return plain(self)
