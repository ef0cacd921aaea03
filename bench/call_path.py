"""The call path of one judging request, followed call by call through the project's modules.

Issue 39 §2: a submit should visit at most 8 modules with no return to a module already left.
This posts one label through the API (the test client, every middleware included) on a small
campaign with gold pairs and an adaptive judging order, and records with ``sys.setprofile``
every call from one project module into another (a *step*); a step into a module entered
before is a *return to a module already left*. Calls through Django, DRF or the standard
library count from the project module that made them; their own modules are not counted.

    .venv/bin/python bench/call_path.py [--request submit|next] [--show]
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path

import harness

names: list[str] = []
"""The function each recorded call entered (for ``--show``)."""
PROJECT = ("annotation", "retrieval", "config", "jobs")


def module_of(filename: str, root: Path) -> str | None:
    """The project module a source file is, or None outside the project."""
    try:
        relative = Path(filename).resolve().relative_to(root)
    except ValueError:
        return None
    parts = relative.with_suffix("").parts
    if not parts or parts[0] not in PROJECT or ".venv" in parts:
        return None
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def follow(call, root: Path) -> list[tuple[str, str]]:
    """The calls from one project module into another that ``call()`` makes, in order, as
    (caller, callee); the first entry's caller is ``""``."""
    calls: list[tuple[str, str]] = []
    names.clear()
    stack: list[str | None] = []

    def profile(frame, event, arg):
        if event == "call":
            module = module_of(frame.f_code.co_filename, root)
            caller = next((m for m in reversed(stack) if m is not None), "")
            stack.append(module)
            if module is not None and module != caller:
                calls.append((caller, module))
                names.append(frame.f_code.co_name)
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return calls


def summary(calls: list[tuple[str, str]]) -> dict:
    """Modules visited, calls between modules, and calls into a module entered before (a
    return to a room already left), with how often each module was entered."""
    entered: dict[str, int] = {}
    again = 0
    for _, module in calls:
        again += module in entered
        entered[module] = entered.get(module, 0) + 1
    return {"modules": len(entered), "steps": len(calls), "returns": again, "visits": entered}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--request", choices=["submit", "next"], default="submit")
    parser.add_argument("--show", action="store_true", help="Print the path step by step.")
    args = parser.parse_args()
    with harness.temporary_django():
        from django.test import Client
        from django.test.utils import setup_test_environment

        from annotation.judging import queue
        from tests.factories import add_gold, make_campaign, make_user

        setup_test_environment()
        campaign = make_campaign(n_queries=6, depth=4, judging_order="maxmean")
        add_gold(campaign, 4)
        annotator = make_user("caller", "annotator")
        client = Client()
        client.force_login(annotator)
        base = f"/api/campaigns/{campaign.pk}/"
        # Warm everything a first request loads once (imports, statement texts, caches).
        first = client.post(base + "next/", content_type="application/json").json()
        task = first["current"]["pair"]
        client.post(
            base + "submit/",
            {"pair": task, "label": "relevant", "uuid": str(uuid.uuid4()), "seconds": 4.0},
            content_type="application/json",
        )
        current = queue.assign(campaign, annotator).current
        token = current.token if current is not None else task
        body = {"pair": str(token), "label": "irrelevant", "uuid": str(uuid.uuid4())}
        body["seconds"] = 5.0

        def request():
            if args.request == "next":
                answer = client.post(base + "next/", content_type="application/json")
            else:
                answer = client.post(base + "submit/", body, content_type="application/json")
            assert answer.status_code == 200, answer.content

        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as statements:
            calls = follow(request, harness.ROOT)
        found = summary(calls)
        if args.show:
            for step, (caller, module) in enumerate(calls):
                print(f"{step:3} {caller or '(client)'} -> {module}.{names[step]}")
        print(f"One {args.request} through the API ({harness.machine()}):")
        print(
            f"  {found['modules']} project modules, {found['steps']} calls between modules, "
            f"{found['returns']} of them into a module entered before"
        )
        print(f"  {len(statements.captured_queries)} SQL statements")
        if args.show:
            for query in statements.captured_queries:
                print("   ", query["sql"][:150])
        busiest = sorted(found["visits"].items(), key=lambda item: -item[1])[:8]
        print("  entered most: " + ", ".join(f"{m} {n}" for m, n in busiest))


if __name__ == "__main__":
    main()
