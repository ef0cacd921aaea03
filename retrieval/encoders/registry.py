"""The built-in encoders by name, and loading a saved encoder whatever its kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Encoder, read_payload
from .jpose import JPoSEEncoder
from .minilm import MiniLMEncoder
from .mme import MMEEncoder
from .random import RandomEncoder
from .srct import SRCTEncoder

ENCODERS: dict[str, type[Encoder]] = {
    RandomEncoder.name: RandomEncoder,
    MiniLMEncoder.name: MiniLMEncoder,
    MMEEncoder.name: MMEEncoder,
    JPoSEEncoder.name: JPoSEEncoder,
    SRCTEncoder.name: SRCTEncoder,
}


def get_encoder(name: str, **config: Any) -> Encoder:
    """A new encoder of kind ``name`` built with ``config``."""
    try:
        cls = ENCODERS[name]
    except KeyError:
        raise KeyError(f"unknown encoder {name!r}; choose one of {sorted(ENCODERS)}") from None
    return cls(**config)


def load_encoder(path: str | Path) -> Encoder:
    """The encoder saved at ``path`` by :meth:`Encoder.save`, of whichever kind it is."""
    payload = read_payload(path)
    name = payload.get("name")
    if name not in ENCODERS:
        raise ValueError(f"{path} holds an unknown encoder {name!r}")
    return ENCODERS[name].from_payload(payload)
