"""A view never queries: every page and API view reads through a service (ARCHITECTURE,
"Views ... parse input, call one service, and render").

The check reads the source of each view module: no manager (``.objects``,
``._base_manager``), no ``get_object_or_404``, no query expression (``Q``, ``F``,
``Prefetch``, ...) and no queryset method. A queryset a service hands back may still be
rendered (a template iterates it) or paginated; the view itself only passes it on."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("config", "jobs", "retrieval", "annotation")

QUERY_NAMES = {
    "get_object_or_404",
    "get_list_or_404",
    "Prefetch",
    "Q",
    "F",
    "Subquery",
    "OuterRef",
    "Exists",
    "Count",
    "Sum",
}
QUERYSET_METHODS = {
    "objects",
    "_base_manager",
    "_default_manager",
    "filter",
    "exclude",
    "annotate",
    "aggregate",
    "values_list",
    "select_related",
    "prefetch_related",
    "order_by",
    "get_or_create",
    "update_or_create",
    "bulk_create",
    "bulk_update",
    "exists",
    "iterator",
    "defer",
    "only",
    "distinct",
    "in_bulk",
    "select_for_update",
}
NO_ARGUMENT_QUERIES = {"count", "all", "first", "last", "delete"}
"""Methods that are queries when called with no argument (``list.count(x)`` takes one)."""


def view_modules() -> list[Path]:
    """Every module of page or API views in the apps."""
    return sorted(
        path
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if path.name == "views.py" or path.name.endswith("_views.py")
    )


def routed_modules() -> set[str]:
    """The project module of every view the site routes (class-based ones by their class),
    the admin's own pages left out: they are Django's ``ModelAdmin`` machinery."""
    import inspect

    from django.urls import URLResolver, get_resolver

    found = set()

    def walk(patterns) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns)
                continue
            view = pattern.callback
            owner = getattr(view, "cls", None) or getattr(view, "view_class", None)
            found.add((owner or inspect.unwrap(view)).__module__)

    walk(get_resolver().url_patterns)
    return {m for m in found if m.split(".")[0] in APPS and not m.endswith(".admin")}


def test_every_routed_view_lives_in_a_view_module():
    """The checks below read the modules named ``views.py`` or ``*_views.py``: every view the
    URLs route to must live in one, so that none escapes them (a view in a service module
    once queried the database unseen)."""
    named = {
        path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
        for path in view_modules()
    }
    routed = routed_modules()
    assert {"retrieval.scoring.views", "annotation.api.views", "jobs.views"} <= routed
    assert routed - named == set()


def queries(source: str) -> list[str]:
    """``line: what`` for each place ``source`` queries the database itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in QUERY_NAMES:
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in QUERYSET_METHODS:
            found.append(f"{node.lineno}: .{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in NO_ARGUMENT_QUERIES
            and not node.args
            and not node.keywords
        ):
            found.append(f"{node.lineno}: .{node.func.attr}()")
    return sorted(found, key=lambda where: int(where.split(":")[0]))


def test_the_check_finds_queries():
    source = (
        "a = get_object_or_404(Campaign, pk=1)\n"
        "b = Pair.objects.filter(x=1)\n"
        "c = campaign.pairs.count()\n"
        "d = [1, 2].count(1)\n"
        "e = service.campaign(1)\n"
    )
    assert queries(source) == [
        "1: get_object_or_404",
        "2: .filter",
        "2: .objects",
        "3: .count()",
    ]


def test_no_view_queries_the_database():
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{where}"
        for path in view_modules()
        for where in queries(path.read_text())
    ]
    assert found == []


def user_error_names(sources: list[str]) -> set[str]:
    """``UserError`` and the name of every class that derives from it in ``sources``."""
    bases = {
        node.name: {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
        for source in sources
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
    }
    names = {"UserError"}
    while grown := {name for name, of in bases.items() if of & names} - names:
        names |= grown
    return names


def catches(source: str, errors: set[str]) -> list[str]:
    """``line: name`` for each ``except`` clause of ``source`` that names one of ``errors``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            for part in ast.walk(node.type):
                name = part.id if isinstance(part, ast.Name) else getattr(part, "attr", None)
                if name in errors:
                    found.append(f"{node.lineno}: {name}")
    return found


def test_the_check_finds_a_caught_user_error():
    errors = user_error_names(["class NotFound(UserError):\n    pass\n", "class A(NotFound): ..."])
    assert errors == {"UserError", "NotFound", "A"}
    source = (
        "try:\n    f()\nexcept (ValueError, errors.A) as exc:\n    pass\n"
        "try:\n    g()\nexcept KeyError:\n    pass\n"
    )
    assert catches(source, errors) == ["3: A"]


def test_no_view_catches_a_user_error():
    """A refusal is answered once, at the boundary: the middleware (a page with its message),
    DRF's handler (the API's error body) or, for a page that shows its form again,
    :class:`config.error_handling.Refusal`; no view catches one itself."""
    sources = [path.read_text() for app in APPS for path in (ROOT / app).rglob("*.py")]
    errors = user_error_names(sources)
    assert {"NotFound", "RunUploadLimit", "LabelSetError"} <= errors
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{where}"
        for path in view_modules()
        for where in catches(path.read_text(), errors)
    ]
    assert found == []
