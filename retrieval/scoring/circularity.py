"""Pure: which runs a label set judges partly with a machine of their own model family.

A label set made from a campaign records the model families of the campaign's machine
assessors in ``metadata["assessor_families"]`` (a sorted list, empty when none; older sets
lack the key). A run shares a family with an assessor when the family equals the run's
built-in encoder, or, for a model that has none (uploaded), when the model's name starts
with it, both compared case-insensitively. Such a run is judged partly by its own kind:
LLM judges favour systems built on the same model as themselves (Clarke & Dietz 2024, on
the circularity of evaluating with LLM assessors).
"""

from collections.abc import Iterable, Mapping

ASSESSOR_FAMILIES = "assessor_families"
"""The label set metadata key that lists the families of the machines that fed it."""


def normalised_families(families: Iterable[str]) -> list[str]:
    """Distinct non-empty families, stripped and lower-cased, sorted: what a label set
    records (an empty family names nothing, so it never matches)."""
    return sorted({family.strip().lower() for family in families if family.strip()})


def recorded_families(metadata: Mapping[str, object] | None) -> list[str]:
    """The families a label set's ``metadata`` records; none when the key is missing (a set
    made before it was recorded) or malformed."""
    value = (metadata or {}).get(ASSESSOR_FAMILIES)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return []
    return normalised_families(value)


def shared_families(families: Iterable[str], encoder: str, model_name: str) -> tuple[str, ...]:
    """The ``families`` a run's model belongs to: equal to its built-in ``encoder``, or, with no
    encoder, a prefix of its ``model_name`` (case-insensitive); sorted, empty when none."""
    encoder = (encoder or "").strip().lower()
    name = (model_name or "").strip().lower()
    return tuple(
        family
        for family in normalised_families(families)
        if (family == encoder if encoder else name.startswith(family))
    )
