"""Time the judging queue's two hot calls, ``assign`` and ``submit``, on SQLite.

Several annotators take turns on one active campaign; each turn is one ``submit`` (which
ends with the annotator's next ``assign``) and one plain ``assign`` (a page reload)::

    .venv/bin/python bench/queue_bench.py [--pairs 20000] [--submits 2000] [--annotators 5]
"""

import statistics
import time
import uuid

from harness import machine, parser, temporary_django

DEPTH = 9
"""Pairs per caption: the shared test campaign ranks nine videos per caption."""


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--pairs", type=int, default=20_000)
    options.add_argument("--submits", type=int, default=2_000)
    options.add_argument("--annotators", type=int, default=5)
    args = options.parse_args()
    with temporary_django():
        from django.contrib.auth import get_user_model

        from annotation.judging import queue, submit
        from tests.factories import make_campaign

        campaign = make_campaign(n_queries=-(-args.pairs // DEPTH), depth=DEPTH)
        campaign.status = campaign.Status.ACTIVE
        campaign.save()
        users = [
            get_user_model().objects.create_user(f"a{i}", password="x")
            for i in range(args.annotators)
        ]
        current = {user.pk: queue.assign(campaign, user).current for user in users}
        assign_ms, submit_ms = [], []
        for turn in range(args.submits):
            user = users[turn % len(users)]
            task = current[user.pk]
            if task is None:
                break
            start = time.perf_counter()
            result = submit.submit(user, task.pair.pk, "relevant", uuid.uuid4(), seconds=1.0)
            submit_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            current[user.pk] = queue.assign(campaign, user).current
            assign_ms.append((time.perf_counter() - start) * 1000)
            assert result.created
        print(machine())
        print(f"{len(submit_ms)} submits on a {campaign.pairs.count()}-pair campaign, SQLite")
        for name, times in (("submit", submit_ms), ("assign", assign_ms)):
            print(
                f"{name}: mean {statistics.fmean(times):.2f} ms, "
                f"median {statistics.median(times):.2f} ms, total {sum(times) / 1000:.2f} s"
            )


if __name__ == "__main__":
    main()
