"""The path of one judging request through the project's modules, recorded call by call
(``tests/call_path.py``; ``bench/call_path.py`` prints it step by step).

The ceilings are the path as it is: a change that makes a request wander through more
modules, or come back to more it has left, fails here and must say why. Reads (property
getters, value objects' dunders) are left out: they are attribute access in the source.
"""

import pytest

from tests.call_path import follow, judging_requests, summary

CEILINGS = {
    # request: (modules, steps between modules, steps into a module entered before); a
    # submit on PostgreSQL takes one step more than on SQLite (it locks the query's tally
    # rows, which SQLite's one writer needs not)
    "submit": (27, 68, 41),
    "next": (17, 28, 11),
}


@pytest.mark.django_db
@pytest.mark.parametrize("request_name", sorted(CEILINGS))
def test_a_judging_request_stays_on_its_path(request_name):
    request = judging_requests()[request_name]
    found = summary(follow(request).calls())
    modules, steps, returns = CEILINGS[request_name]
    assert found["modules"] <= modules and found["steps"] <= steps and found["returns"] <= returns
    # the answer is assembled once: one service call, one serializer
    assert found["visits"]["annotation.judging.answer"] == 1
    assert found["visits"]["annotation.api.views"] == 1
    # the relevance predictor is fitted by a job, never inside a judging request
    assert not [module for module in found["visits"] if ".prediction" in module]


def test_the_recorder_sees_returns():
    """A call into a module, back, and into it again is one return; reads are told apart."""
    from tests import factories

    def twice():
        factories.uuid.uuid4()  # the standard library: not a step
        from annotation.judging import task_ids

        task_ids.encode(1, 2)
        task_ids.encode(1, 3)

    found = summary(follow(twice).calls())
    assert found["visits"].get("annotation.judging.task_ids") == 2 and found["returns"] == 1
