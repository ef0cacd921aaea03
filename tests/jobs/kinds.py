"""Job kinds for the tests: count units slowly, or fail on request (the user's fault, a
bug, or numpy refusing an array: a ValueError that is not the user's fault).

Imported by the tests, and by the worker processes they start, which is how a real worker
learns these kinds.
"""

import time
from pathlib import Path

import numpy as np
from django import forms

from config.errors import UserError
from jobs.progress import Reporter
from jobs.registry import JobKind, register


class CountForm(forms.Form):
    units = forms.IntegerField(min_value=0)
    seconds = forms.FloatField(min_value=0, required=False)
    fail = forms.ChoiceField(
        choices=[("", "no"), ("user", "user"), ("bug", "bug"), ("numpy", "numpy")], required=False
    )
    gate = forms.CharField(required=False)


GATE_POLL_SECONDS = 0.05


def count(
    reporter: Reporter, units: int, seconds: float = 0.0, fail: str = "", gate: str = ""
) -> dict:
    """Count ``units`` over ``seconds``, then fail as asked or return the count.

    With ``gate`` (a file path), counting stops after the first unit while that file exists:
    a test holds the job running for as long as it needs, however slow the machine, and
    removes the file to let a later attempt finish at once."""
    reporter.step("counting", total=units)
    for done in range(units):
        time.sleep(seconds / max(units, 1))
        reporter.advance()
        if gate and done == 0 and Path(gate).exists():
            reporter.flush()  # the first unit shows before the wait
            while Path(gate).exists():
                time.sleep(GATE_POLL_SECONDS)
    if fail == "user":
        raise UserError("the count file test.txt, line 3, field 'units': not a number")
    if fail == "bug":
        raise RuntimeError("secret internals")
    if fail == "numpy":
        np.arange(units + 2).reshape(units + 1, 3)  # ValueError: cannot reshape
    return {"counted": units}


register(JobKind("test-count", "Count (tests)", count, CountForm, describe=lambda a: "count"))
register(
    JobKind(
        "test-gpu-count",
        "Count on the GPU queue (tests)",
        count,
        CountForm,
        queue="gpu",
        describe=lambda a: "count on gpu",
    )
)
JOINING = register(
    JobKind("test-joining-count", "Count, joining (tests)", count, CountForm, joins=True)
)
