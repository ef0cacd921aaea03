"""The call path of one judging request, followed call by call through the project's modules.

Records with ``sys.setprofile`` every call between project modules of one API request on a
small campaign (``tests/call_path.py``, which ``tests/annotation/judging/test_call_path.py``
checks too)::

    .venv/bin/python bench/call_path.py [--request submit|next] [--show]
"""

from __future__ import annotations

import harness


def main() -> None:
    options = harness.parser(__doc__, paragraph=True)
    options.add_argument("--request", choices=["submit", "next"], default="submit")
    options.add_argument("--show", action="store_true", help="Print the path step by step.")
    args = options.parse_args()
    with harness.temporary_django():
        from django.db import connection
        from django.test.utils import CaptureQueriesContext, setup_test_environment

        from tests.call_path import follow, judging_requests, summary

        setup_test_environment()
        request = judging_requests()[args.request]
        with CaptureQueriesContext(connection) as statements:
            trace = follow(request)
        if args.show:
            for number, step in enumerate(trace.steps):
                read = " (read)" if step.read else ""
                print(
                    f"{number:3} {step.caller or '(client)'} -> {step.module}.{step.function}{read}"
                )
            for query in statements.captured_queries:
                print("   ", query["sql"][:150])
        print(f"One {args.request} through the API ({harness.machine()}):")
        for title, steps in (("all steps", trace.steps), ("calls, reads left out", trace.calls())):
            found = summary(steps)
            busiest = sorted(found["visits"].items(), key=lambda item: -item[1])[:6]
            print(
                f"  {title}: {found['modules']} project modules, {found['steps']} steps between "
                f"modules, {found['returns']} into a module entered before; entered most: "
                + ", ".join(f"{m} {n}" for m, n in busiest)
            )
        print(f"  {len(statements.captured_queries)} SQL statements")


if __name__ == "__main__":
    main()
