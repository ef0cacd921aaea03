"""Hand-written statements derived from the models, each registered with its row type.

Where composing a query through the ORM cost several times running it (the judging path,
``bench/request_profile.py``), a :class:`Statement` writes readable SQL whose placeholders are
filled from the models' ``_meta``: ``{pair}`` a table, ``{pair.open_slots}`` a column,
``{pair:p.*}`` every concrete column through alias ``p`` (as ``p_<column>``), and
``{campaign:k.* -provenance}`` the same less some fields; :class:`Compiled` compiles an ORM
query once per backend instead. :func:`check_registry` fills every statement at start-up, so
a renamed field stops the project from starting, and rows come back as named tuples, plain
tuples or model instances built through the ORM's own converters (:func:`instances`).
"""

import functools
import re
import string
from collections import namedtuple
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import connection
from django.db.models import DEFERRED, Model, QuerySet


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def table(model: type[Model]) -> str:
    return quote(model._meta.db_table)


def select_list(columns: Mapping[str, str]) -> str:
    """A select list from ``{alias: expression}`` (an expression ``"p.id"`` is a column)."""
    return ", ".join(
        f"{_column(expression) if _is_column(expression) else expression} AS {quote(alias)}"
        for alias, expression in columns.items()
    )


def _is_column(expression: str) -> bool:
    alias, _, column = expression.partition(".")
    return alias.isidentifier() and column.isidentifier()


def _column(expression: str) -> str:
    alias, column = expression.split(".")
    return f"{alias}.{quote(column)}"


def column_names(cursor) -> tuple[str, ...]:
    return tuple(column[0] for column in cursor.description)


Source = tuple[type[Model], str] | tuple[type[Model], str, tuple[str, ...]]
"""(model, table alias[, field names left out: deferred on the instance, never read])."""
Sources = tuple[Source, ...]


def model_columns(sources: Sources) -> dict[str, str]:
    """The select list (``{alias: column}``) of every concrete field of each source."""
    return {
        f"{source[1]}_{field.column}": f"{source[1]}.{field.column}"
        for source in sources
        for field in source[0]._meta.concrete_fields
        if field.name not in (source[2] if len(source) > 2 else ())
    }


@functools.cache
def _field_converters(vendor: str, model: type[Model], alias: str, name: str) -> tuple:
    """(column, the ORM's converters) of ``model``'s field ``name``, once per process."""
    column = model._meta.get_field(name).get_col(alias)
    return column, connection.ops.get_db_converters(column) + column.get_db_converters(connection)


@functools.cache
def _readers(
    vendor: str, model: type[Model], alias: str, skip: tuple[str, ...] = ()
) -> tuple[list[str], list[tuple[str, int, object, list]]]:
    """Every concrete attname, and per field read (row field, slot, column, the ORM's
    converters): worked out once per process, not per row, halving the readers' cost."""
    fields = model._meta.concrete_fields
    return [field.attname for field in fields], [
        (f"{alias}_{field.column}", slot, *_field_converters(vendor, model, alias, field.name))
        for slot, field in enumerate(fields)
        if field.name not in skip
    ]


def instances(sources: Sources, row: tuple) -> list[Model]:
    """One model instance per source from a row whose select list is :func:`model_columns`
    (a field a source skips is left deferred)."""
    built = []
    for source in sources:
        attnames, readers = _readers(connection.vendor, *source)
        values = [DEFERRED] * len(attnames)
        for name, slot, column, converters in readers:
            value = getattr(row, name)
            for converter in converters:
                value = converter(value, column, connection)
            values[slot] = value
        built.append(source[0].from_db(connection.alias, attnames, values))
    return built


def converted(model: type[Model], alias: str, name: str, value: object) -> object:
    """``value`` of ``model``'s field ``name`` as the ORM would read it."""
    column, converters = _field_converters(connection.vendor, model, alias, name)
    for converter in converters:
        value = converter(value, column, connection)
    return value


def model_row(name: str, *parts: str | Sources) -> type:
    """The named tuple of a row whose select list is ``parts``: a name is one column, a tuple
    of sources :func:`model_columns` of them."""
    fields = [
        field
        for part in parts
        for field in ((part,) if isinstance(part, str) else model_columns(part))
    ]
    return namedtuple(name, fields)


# -- the registry ---------------------------------------------------------------------------

REGISTRY: dict[str, "Statement"] = {}
"""Every registered statement by name (filled at start-up, run by the test on each backend)."""

Variant = Mapping[str, Any]


class _Table:
    """A model in a statement's text: its table, a field's column as an attribute, and every
    concrete column through an alias as the format spec ``alias.* [-field ...]``."""

    def __init__(self, model: type[Model]) -> None:
        self.model = model

    def __format__(self, spec: str) -> str:
        if not spec:
            return table(self.model)
        alias, star, rest = spec.partition(".*")
        skip = tuple(name.removeprefix("-") for name in rest.split())
        if not star or not alias.isidentifier() or any(not n.startswith("-") for n in rest.split()):
            raise ValueError(f"{spec!r} is not 'alias.*' or 'alias.* -field ...'")
        for name in skip:
            self.model._meta.get_field(name)
        return select_list(model_columns(((self.model, alias, skip),)))

    def __getattr__(self, name: str) -> str:
        if name.startswith("__"):
            raise AttributeError(name)
        column = getattr(self.model._meta.get_field(name), "column", None)
        if column is None:
            raise FieldDoesNotExist(f"{self.model.__name__}.{name} has no column")
        return quote(column)


class Statement:
    """A hand-written statement: ``text`` with ``{model}`` placeholders, or a function of a
    variant's keywords giving it; ``row`` the named tuple of its rows (or a function of the
    variant; None for none); ``variants`` the keyword sets checked at start-up and by the
    statement test. Parameters are named (``%(name)s``)."""

    def __init__(
        self,
        name: str,
        models: Mapping[str, type[Model]],
        text: str | Callable[..., str],
        row: type | Callable[..., type] | None,
        variants: Sequence[Variant] = ({},),
    ) -> None:
        if name in REGISTRY:
            raise ValueError(f"a statement {name!r} is registered already")
        self.name, self.models, self.text, self.row = name, models, text, row
        self.variants = tuple(variants)
        self._filled: dict[tuple, tuple[str, type | None]] = {}
        """(SQL, row type) by backend and variant."""
        self._checked: set[tuple] = set()
        REGISTRY[name] = self

    def __repr__(self) -> str:
        return f"<Statement {self.name}>"

    def fill(self, **variant) -> str:
        """The statement's SQL on the current connection's backend (filled once)."""
        return self._prepare(variant)[1]

    def row_type(self, **variant) -> type | None:
        row = self.row
        return row(**variant) if callable(row) and not isinstance(row, type) else row

    def _prepare(self, variant: Variant) -> tuple[tuple, str, type | None]:
        """(cache key, SQL, row type) of a variant on the current backend."""
        key = (connection.vendor, *variant.items())
        found = self._filled.get(key)
        if found is None:
            text = self.text(**variant) if callable(self.text) else self.text
            names = {name: _Table(model) for name, model in self.models.items()}
            try:
                filled = string.Formatter().vformat(text, (), names)
            except (FieldDoesNotExist, KeyError, AttributeError, ValueError) as error:
                raise ImproperlyConfigured(
                    f"statement {self.name} ({dict(variant)}): {type(error).__name__}: {error}"
                ) from error
            found = self._filled[key] = (filled, self.row_type(**variant))
        return key, *found

    def check(self, **variant) -> None:
        """Fill the variant (what start-up does): a name the models lack raises here."""
        self.fill(**variant)

    def parameters(self, **variant) -> list[str]:
        """The parameter names of the statement's SQL, in order of first use."""
        return list(dict.fromkeys(re.findall(r"%\((\w+)\)s", self.fill(**variant))))

    def _execute(self, cursor, params: Mapping[str, object], variant: Variant) -> type | None:
        key, statement, row = self._prepare(variant)
        cursor.execute(statement, params)
        if key not in self._checked:
            got = None if cursor.description is None else column_names(cursor)
            wanted = None if row is None else tuple(row._fields)
            if got != wanted:
                raise ImproperlyConfigured(f"statement {self.name}: columns {got} are not {wanted}")
            self._checked.add(key)
        return row

    def rows(self, params: Mapping[str, object], **variant) -> list:
        """Run the statement and return its rows as its row type."""
        with connection.cursor() as cursor:
            row = self._execute(cursor, params, variant)
            return [row._make(values) for values in cursor.fetchall()]

    def instances(self, params: Mapping[str, object], sources: Sources, **variant) -> list:
        """Run it and build each row's model instances, one per source (:func:`instances`)."""
        return [instances(sources, row) for row in self.rows(params, **variant)]

    def plain_rows(self, params: Mapping[str, object], **variant) -> list[tuple]:
        """Its rows as plain tuples, for many rows: named tuples made a 70,000-label export
        8-20% slower (the garbage collector never untracks tuple subclasses)."""
        with connection.cursor() as cursor:
            self._execute(cursor, params, variant)
            return cursor.fetchall()

    def execute(self, params: Mapping[str, object], **variant) -> int:
        """Run a statement that returns no rows; how many rows it changed."""
        with connection.cursor() as cursor:
            self._execute(cursor, params, variant)
            return cursor.rowcount

    def cursor_rows(self, cursor, params: Mapping[str, object], **variant) -> Iterable[tuple]:
        """Run it on an open cursor (for reading in chunks); the cursor then holds the rows."""
        self._execute(cursor, params, variant)
        return cursor


class Compiled(Statement):
    """A query the ORM writes, compiled once per backend and variant: ``build`` returns the
    queryset given stand-ins for the ``params``, and each call binds the real values there."""

    def __init__(
        self,
        name: str,
        build: Callable[..., QuerySet],
        params: Sequence[str],
        row: type | Callable[..., type] | None,
        variants: Sequence[Variant] = ({},),
    ) -> None:
        self.build, self.params = build, tuple(params)
        self._order: dict[tuple, list[str]] = {}
        super().__init__(name, {}, self._compile, row, variants)

    def check(self, **variant) -> None:
        """Build the variant's queryset (resolving its fields) without compiling it, which for a
        locking query would ask the database whether a transaction is open."""
        self.build(**dict.fromkeys(self.params, 0), **variant)

    def _compile(self, **variant) -> str:
        # Negative, and within even a small integer's range (an out-of-range value would
        # compile to an empty result): no id or count looks like one.
        stand_ins = {name: -32000 - i for i, name in enumerate(self.params)}
        sql, params = self.build(**stand_ins, **variant).query.sql_with_params()
        by_value = {value: name for name, value in stand_ins.items()}
        unknown = [value for value in params if value not in by_value and not _literal(value)]
        if unknown:
            raise ValueError(f"parameters {unknown} are not among {self.params}")
        # Rebind by name: each %s becomes the named placeholder of its stand-in, or the
        # integer constant the query wrote (``Value(0)``) as a literal.
        pieces = sql.replace("%%", "\0").split("%s")
        if len(pieces) != len(params) + 1:
            raise ValueError(f"{len(pieces) - 1} placeholders for {len(params)} parameters")
        named = pieces[0]
        for value, piece in zip(params, pieces[1:], strict=True):
            bound = f"%({by_value[value]})s" if value in by_value else str(int(value))
            named += bound + piece
        # Braces in the SQL must survive the statement's filling.
        return named.replace("\0", "%%").replace("{", "{{").replace("}", "}}")


def _literal(value: object) -> bool:
    """Whether a compiled query's parameter is a small integer constant safe to write into the
    SQL (psycopg's ``Int4`` included; never a bool or a stand-in)."""
    return isinstance(value, int) and not isinstance(value, bool) and -32000 < value < 32000


def check_registry() -> None:
    """Fill every statement's variants: a field renamed or gone raises ``ImproperlyConfigured``
    naming the statement (from the apps' ``ready``)."""
    for statement in REGISTRY.values():
        for variant in statement.variants:
            statement.check(**variant)
