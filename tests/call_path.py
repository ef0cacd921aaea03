"""Follow one request call by call through the project's modules (the test of the judging
path and ``bench/call_path.py`` share it).

A *step* is a call from one project module into another; a step into a module entered
before is a *return to a module already left*. Calls through Django, DRF or the standard
library count from the project module that made them. A *read* is a step into a property
getter or a dunder method of a value object (``__init__``, ``__len__``...): attribute access
in the source, counted apart so the figures show the calls the code spells out.
"""

from __future__ import annotations

import functools
import inspect
import random
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("annotation", "retrieval", "config", "jobs")


@dataclass(frozen=True)
class Step:
    caller: str
    module: str
    function: str
    read: bool


@dataclass
class Trace:
    """The steps of one request, in order, with the summary figures of :func:`summary`."""

    steps: list[Step] = field(default_factory=list)

    def calls(self) -> list[Step]:
        """The steps that are not reads."""
        return [step for step in self.steps if not step.read]


@functools.cache
def _module_of(filename: str) -> str | None:
    """The project module a source file is, or None outside the project."""
    try:
        relative = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    parts = relative.with_suffix("").parts
    if not parts or parts[0] not in PROJECT or ".venv" in parts:
        return None
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _property_codes() -> set:
    """The code objects of every property getter and cached property in the project's
    loaded modules."""
    codes = set()
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in PROJECT:
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            for attribute in vars(cls).values():
                if isinstance(attribute, property | functools.cached_property):
                    getter = attribute.fget if isinstance(attribute, property) else attribute.func
                    code = getattr(getter, "__code__", None)
                    if code is not None:
                        codes.add(code)
    return codes


def follow(call: Callable[[], object]) -> Trace:
    """The steps ``call()`` makes between the project's modules."""
    reads = _property_codes()
    path = Trace()
    stack: list[str | None] = []

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            module = _module_of(code.co_filename)
            caller = next((m for m in reversed(stack) if m is not None), "")
            stack.append(module)
            if module is not None and module != caller:
                dunder = code.co_name.startswith("__") and code.co_name != "__call__"
                path.steps.append(Step(caller, module, code.co_name, code in reads or dunder))
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return path


def summary(steps: list[Step]) -> dict:
    """Modules visited, steps, and steps into a module entered before, with how often each
    module was entered."""
    entered: dict[str, int] = {}
    again = 0
    for step in steps:
        again += step.module in entered
        entered[step.module] = entered.get(step.module, 0) + 1
    return {"modules": len(entered), "steps": len(steps), "returns": again, "visits": entered}


def judging_requests() -> dict[str, Callable[[], None]]:
    """A small campaign with gold pairs and an adaptive judging order (maxmean), an
    annotator who judged once (so everything a first request loads once is loaded), and
    their next two requests, warmed: ``next`` (asking again for the same leases) and
    ``submit`` (a label on the pair they hold), each asserting a 200. The gold draw is
    seeded so that no gold task comes in the measured request (as in 19 of 20 at the
    campaign's rate): the path is the same on every run."""
    from django.test import Client

    from annotation.judging import queue
    from tests.factories import add_gold, make_campaign, make_user

    campaign = make_campaign(n_queries=6, depth=4, judging_order="maxmean")
    add_gold(campaign, 4, rate=0.05)
    annotator = make_user("caller", "annotator")
    client = Client()
    client.force_login(annotator)
    base = f"/api/campaigns/{campaign.pk}/"
    first = client.post(base + "next/", content_type="application/json").json()
    task = first["current"]["pair"]
    client.post(
        base + "submit/",
        {"pair": task, "label": "relevant", "uuid": str(uuid.uuid4()), "seconds": 4.0},
        content_type="application/json",
    )
    current = queue.assign(campaign, annotator).current
    token = current.token if current is not None else task
    body = {"pair": str(token), "label": "irrelevant", "uuid": str(uuid.uuid4()), "seconds": 5.0}

    def next_request() -> None:
        random.seed(1)  # no gold task drawn: random.random() gives 0.134 first
        answer = client.post(base + "next/", content_type="application/json")
        assert answer.status_code == 200, answer.content

    def submit_request() -> None:
        random.seed(1)
        answer = client.post(base + "submit/", body, content_type="application/json")
        assert answer.status_code == 200, answer.content

    return {"next": next_request, "submit": submit_request}
