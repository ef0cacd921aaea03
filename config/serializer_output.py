"""A DRF serializer's output for the hot answers, with its fields bound once: building the
serializer per judging answer spent a fifth of the request's CPU (``bench/request_profile.py``);
``tests/annotation/test_api.py`` checks this gives exactly what the serializer gives."""

from __future__ import annotations

from collections.abc import Callable

from rest_framework import serializers


def _read(value, attrs: tuple[str, ...]):
    for attr in attrs:
        if value is None:
            return None
        value = value[attr] if isinstance(value, dict) else getattr(value, attr)
    return value


class CompiledOutput:
    """``serializer_class``'s representation of an object (nested serializers compiled too;
    a method field called on one shared serializer, so it must not read ``context``)."""

    def __init__(self, serializer_class: type[serializers.Serializer]) -> None:
        self.serializer = serializer_class()
        self.plan: list[tuple[str, tuple[str, ...] | None, Callable]] = []
        for name, field in self.serializer.fields.items():
            if isinstance(field, serializers.SerializerMethodField):
                self.plan.append((name, None, getattr(self.serializer, field.method_name)))
            elif isinstance(field, serializers.BaseSerializer):
                self.plan.append((name, tuple(field.source_attrs), CompiledOutput(type(field))))
            else:
                self.plan.append((name, tuple(field.source_attrs), field.to_representation))

    def __call__(self, instance) -> dict:
        data = {}
        for name, attrs, convert in self.plan:
            if attrs is None:
                data[name] = convert(instance)
                continue
            value = _read(instance, attrs)
            data[name] = None if value is None else convert(value)
        return data
