"""The opaque ids under which the judging API serves tasks, and back to the pair they name.

An annotator must not tell a gold task from a real one (a gold task scores them), so the id
a task is served under says nothing about the pair behind it: not its kind, not its place
in the id sequence (gold tasks are made after the pool, so their pair ids are the highest),
not whether another annotator was shown the same pair. The id is a deterministic
authenticated encryption of (annotator, pair): the synthetic-IV (SIV) construction of
Rogaway & Shrimpton 2006 over a keyed PRF (HMAC-SHA256, keys derived from ``SECRET_KEY``
by Django's ``salted_hmac``):

- the first 8 bytes (``tag``) are PRF₁(annotator, pair), the synthetic IV;
- the last 8 bytes are the pair id XOR PRF₂(annotator, tag).

Decoding recomputes the pad, then the tag, so a forged or altered id, or one made for
another annotator, names nothing. Deterministic rather than a random token stored on the
lease: the same pair keeps its id for its annotator across ``next/`` calls (the page
compares ids to keep the playing video), retries, undo and the grace period after its
lease ends, without a column, a lookup or an extra statement per request; per annotator, so
two annotators comparing notes cannot see that they were shown the same pair (gold pairs
go to everyone, real pairs to one or two).
"""

import hmac
import re
import struct

from django.utils.crypto import salted_hmac

MAX_ID = 2**63 - 1
"""The largest id a row can have (a signed 64-bit column on both databases)."""

_FORMAT = re.compile(r"[0-9a-f]{32}")
_SALT = "annotation.task_ids"


def _prf(purpose: str, *values: int | bytes) -> bytes:
    message = b"".join(v if isinstance(v, bytes) else struct.pack(">Q", v) for v in values)
    return salted_hmac(f"{_SALT}.{purpose}", message, algorithm="sha256").digest()[:8]


def encode(annotator_id: int, pair_id: int) -> str:
    """The id under which ``pair_id`` is served to ``annotator_id``: 32 hex digits."""
    tag = _prf("tag", annotator_id, pair_id)
    pad = int.from_bytes(_prf("pad", annotator_id, tag))
    return (tag + (pair_id ^ pad).to_bytes(8)).hex()


def decode(annotator_id: int, task: object) -> int | None:
    """The pair id ``task`` names for ``annotator_id``, or None when it names nothing (not
    an id of this form, altered, made for someone else)."""
    if not isinstance(task, str) or not _FORMAT.fullmatch(task):
        return None
    raw = bytes.fromhex(task)
    tag = raw[:8]
    pair_id = int.from_bytes(raw[8:]) ^ int.from_bytes(_prf("pad", annotator_id, tag))
    if pair_id > MAX_ID or not hmac.compare_digest(tag, _prf("tag", annotator_id, pair_id)):
        return None
    return pair_id
