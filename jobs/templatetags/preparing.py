"""``{% preparing %}``: a page says which of its data a job is still making, and how far.

``{% preparing %}`` lists the work ``make run`` deferred that is unfinished (the home
page); ``{% preparing "build_model,proxies" dataset="demo" %}`` lists unfinished jobs of
those kinds whose arguments include the given values (a dataset page waiting for its
models). Nothing is shown once they are done. One query.
"""

from django import template

from jobs.pending import startup_jobs, unfinished_jobs

register = template.Library()


@register.inclusion_tag("jobs/_preparing.html", takes_context=True)
def preparing(context, kinds: str = "", **arguments) -> dict:
    names = tuple(name.strip() for name in kinds.split(",") if name.strip())
    jobs = unfinished_jobs(names, **arguments) if names else startup_jobs()
    return {"preparing_jobs": jobs, "perms": context.get("perms")}
