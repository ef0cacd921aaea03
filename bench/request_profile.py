"""Where one judging request's time goes in the web process (measure before optimising).

Judges ``--judgements`` pairs on ``bench/load.py``'s PostgreSQL campaign through Django's full
WSGI stack in this process; prints wall and CPU time per request, the SQL statements and,
with ``--profile``, cProfile's top functions::

    .venv/bin/python bench/request_profile.py [--pairs 60000] [--judgements 400] [--profile]
"""

import cProfile
import io
import json
import pstats
import time
import uuid
from collections import Counter
from pathlib import Path

import load
from harness import drop_database, log, parser, postgres_database, setup_django


def arguments():
    options = parser(__doc__)
    add = options.add_argument
    add("--pairs", type=int, default=60_000)
    add("--annotators", type=int, default=4)
    add("--judgements", type=int, default=400)
    add("--judging-order", default="maxmean")
    add("--gold-rate", type=float, default=0.0, help="as bench/load.py's")
    add("--qualified", action="store_true", help="as bench/load.py's")
    add("--policy", default="fire", choices=["fire", "adaptive"])
    add("--profile", action="store_true", help="print cProfile's top functions")
    add("--sort", default="cumulative", help="cProfile's sort key")
    add("--only", help="print only functions whose path matches this regex")
    add("--sql", action="store_true", help="print one request's statements")
    add("--by-package", action="store_true", help="with --profile: own CPU summed per package")
    add("--no-prepared", dest="prepared", action="store_false")
    add("--sql-gold", action="store_true", help="print the statements of the first gold request")
    args = options.parse_args()
    args.lease_seconds = 300
    return args


class Judging:
    """The annotators' test clients, each judging the task its last answer served."""

    def __init__(self, campaign_id: int, sessions: list[tuple[int, str]], sql_gold: bool):
        from django.conf import settings
        from django.test import Client

        from annotation.models import GoldPair

        settings.ALLOWED_HOSTS = ["*"]
        self.sessions = sessions
        self.clients = []
        for _, key in sessions:
            client = Client(enforce_csrf_checks=False)
            client.cookies[settings.SESSION_COOKIE_NAME] = key
            self.clients.append(client)
        self.base = f"/api/campaigns/{campaign_id}/"
        self.gold_labels = dict(
            GoldPair.objects.filter(campaign_id=campaign_id).values_list("task_id", "label")
        )
        # Warm-up: first leases, imports, connection.
        self.tasks = [
            client.post(self.base + "next/", content_type="application/json").json()
            for client in self.clients
        ]
        self.cpu_by_kind: dict[str, list[float]] = {"gold": [], "other": []}
        self.statements_by_kind: dict[str, list[int]] = {"gold": [], "other": []}
        self.sql_gold = sql_gold
        self.shown: list[str] = []

    def clear(self) -> None:
        for values in (*self.cpu_by_kind.values(), *self.statements_by_kind.values()):
            values.clear()

    def judge(self, i: int) -> None:
        """One submit; gold tasks are answered right (a wrong streak would pause the
        annotator), and the request counts as "gold" when it answers or serves one."""
        from django.db import connection

        from annotation.judging import task_ids

        k = i % len(self.clients)
        current = self.tasks[k]["current"]
        if current is None:
            raise SystemExit(f"nothing served: {self.tasks[k]}")
        user = self.sessions[k][0]
        pair = task_ids.decode(user, current["pair"])  # tasks come under opaque ids
        label = self.gold_labels.get(pair, "irrelevant")
        body = {"pair": current["pair"], "label": label, "uuid": str(uuid.uuid4()), "seconds": 4.0}
        sent: list[str] = []

        def count(execute, sql, params, many, context):
            sent.append(sql)
            return execute(sql, params, many, context)

        cpu0 = time.process_time()
        with connection.execute_wrapper(count):
            answer = self.clients[k].post(
                self.base + "submit/", body, content_type="application/json"
            )
        cpu = time.process_time() - cpu0
        if answer.status_code != 200:
            raise SystemExit(f"submit answered {answer.status_code}: {answer.content[:300]!r}")
        self.tasks[k] = answer.json()
        served = [
            task_ids.decode(user, t["pair"])
            for t in (self.tasks[k]["current"], self.tasks[k]["upcoming"])
            if t
        ]
        kind = (
            "gold"
            if pair in self.gold_labels or any(p in self.gold_labels for p in served[1:])
            else "other"
        )
        self.cpu_by_kind[kind].append(cpu)
        self.statements_by_kind[kind].append(len(sent))
        if self.sql_gold and kind == "gold" and not self.shown:
            self.shown.extend(sent)


def measure(args, judging: Judging) -> tuple[dict, list, cProfile.Profile | None]:
    """40 untimed judgements, one whose statements are captured, then ``--judgements``
    timed (and profiled with ``--profile``): the figures, the statements, the profiler."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for i in range(40):
        judging.judge(i)
    with CaptureQueriesContext(connection) as captured:
        judging.judge(0)
    queries = list(captured.captured_queries)
    statements = Counter(query["sql"].split(" ", 1)[0] for query in queries)
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    judging.clear()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    for i in range(args.judgements):
        judging.judge(i)
    if profiler:
        profiler.disable()
    wall = (time.perf_counter() - wall0) / args.judgements * 1000
    cpu = (time.process_time() - cpu0) / args.judgements * 1000
    result = {
        "judging_order": args.judging_order,
        "policy": args.policy,
        "judgements": args.judgements,
        "gold_rate": args.gold_rate,
        "qualified": args.qualified,
        "wall_ms_per_request": round(wall, 2),
        "cpu_ms_per_request": round(cpu, 2),
        "cpu_ms_by_kind": {
            kind: {"requests": len(v), "mean": round(sum(v) / len(v) * 1000, 2)}
            for kind, v in judging.cpu_by_kind.items()
            if v
        },
        "statements_by_kind": {
            kind: round(sum(v) / len(v), 1) for kind, v in judging.statements_by_kind.items() if v
        },
        "statements_per_request": len(queries),
        "statement_kinds": dict(statements),
        "profiled": bool(profiler),
    }
    return result, queries, profiler


def main() -> None:
    args = arguments()
    url = postgres_database(load.DB_NAME)
    setup_django(load.server_environment(url, args.prepared, debug=False))
    campaign_id, pairs, sessions = load.build_world(args, args.annotators)
    judging = Judging(campaign_id, sessions, args.sql_gold)
    result, queries, profiler = measure(args, judging)
    result = {"pairs": pairs, **result}
    for sql_text in judging.shown:
        log("gold: " + " ".join(sql_text.split())[:300])
    if args.sql:
        for query in queries:
            log(" ".join(query["sql"].split())[:300])
    if profiler:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).sort_stats(args.sort)
        stats.print_stats(*([args.only] if args.only else []), 45)
        log(out.getvalue())
        if args.by_package:
            log(by_package(stats))
    drop_database(url)
    print(json.dumps(result))


PROJECT = str(Path(__file__).resolve().parent.parent) + "/"
"""This checkout's root: profiled functions under it (but its .venv) are the project's."""


def by_package(stats: pstats.Stats) -> str:
    """Own (not cumulative) profiled time summed per package, largest first: which layer
    (Django's ORM, DRF, the driver, this project) the CPU goes to."""
    sums: Counter = Counter()
    for (path, _, _), (_, _, own, _, _) in stats.stats.items():
        parts = path.replace("\\", "/").split("/")
        if path.startswith(PROJECT) and "site-packages" not in parts:
            key = "firepool/" + "/".join(parts[len(PROJECT.split("/")) - 1 : -1])
        elif "site-packages" in parts:
            rest = parts[parts.index("site-packages") + 1 :]
            key = "/".join(rest[:3] if rest[0] == "django" else rest[:1])
        else:
            key = "python" if path.startswith("/") else path.split(" ")[0]
        sums[key] += own
    total = sum(sums.values()) or 1.0
    return "\n".join(f"{share / total:6.1%}  {name}" for name, share in sums.most_common(25))


if __name__ == "__main__":
    main()
