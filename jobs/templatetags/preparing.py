"""``{% preparing %}``: the unfinished work ``make run`` deferred, or with ``"kind,kind"
name=value`` the unfinished jobs of those kinds with those arguments (one query)."""

from django import template

from jobs.runner import startup_jobs, unfinished_jobs

register = template.Library()


@register.inclusion_tag("jobs/_preparing.html", takes_context=True)
def preparing(context, kinds: str = "", **arguments) -> dict:
    names = tuple(name.strip() for name in kinds.split(",") if name.strip())
    jobs = unfinished_jobs(names, **arguments) if names else startup_jobs()
    return {"preparing_jobs": jobs, "perms": context.get("perms")}
