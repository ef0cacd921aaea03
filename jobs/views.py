"""Job pages: the list with forms to start jobs, one job's status, retry and its file (GET
pages only read: the workers' heartbeat reaps lost jobs)."""

import mimetypes
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from config import roles
from config.error_handling import Refusal
from jobs import runner
from jobs.models import Job
from jobs.registry import GENERIC_RESULT, JobKind, find_kind, kinds

REFUSED = "You may not see or start these jobs."
# Checked before any lookup: job ids and kind names are not for outsiders.
staff_only = roles.permission_required(roles.VIEW_JOBS, REFUSED)


def _startable(user, name: str) -> JobKind:
    """The kind called ``name`` if ``user`` may start it: else a 404 (unknown) or a 403."""
    kind = find_kind(name)
    if kind is None:
        raise Http404("unknown job kind")
    roles.require(user, kind.permission, REFUSED)
    return kind


@staff_only
def job_list(request: HttpRequest) -> HttpResponse:
    """Recent jobs, and a form for the kind picked with ``?kind=`` among those you may start
    (a kind with a page of its own, ``form_url``, goes to that page)."""
    kind = find_kind(request.GET.get("kind") or "")
    if kind is not None and kind.form_url and roles.has_perm(request.user, kind.permission):
        query = request.GET.copy()
        del query["kind"]
        target = reverse(kind.form_url)
        return redirect(f"{target}?{query.urlencode()}" if query else target)
    return _render_list(request, request.GET.get("kind"), None)


def _render_list(request: HttpRequest, kind_name: str | None, form) -> HttpResponse:
    startable = [kind for kind in kinds() if roles.has_perm(request.user, kind.permission)]
    chosen = next((k for k in startable if k.name == kind_name), None)
    if chosen is not None and form is None:
        # Links may prefill fields, e.g. /jobs/?kind=proxies&dataset=demo.
        form = chosen.form(initial={k: v for k, v in request.GET.items() if k != "kind"})
    page = Paginator(runner.recent_jobs(), 50).get_page(request.GET.get("page"))
    return render(
        request,
        "jobs/list.html",
        {"page": page, "startable": startable, "chosen": chosen, "form": form},
        status=400 if form is not None and form.is_bound else 200,
    )


@require_POST
@staff_only
def job_start(request: HttpRequest, kind_name: str) -> HttpResponse:
    """Queue a job of one kind from its form; errors come back on the form."""
    kind = _startable(request.user, kind_name)
    form = kind.form(data=request.POST)
    if not form.is_valid():
        return _render_list(request, kind.name, form)
    job, new = runner.start(kind, runner.cleaned(form), request.user)
    if not new:
        messages.info(
            request, f"Job {job.pk} was already {job.status} with these settings: this is it."
        )
    return redirect("job-detail", job_id=job.pk)


@staff_only
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    """One job: status, progress, result or the reason it failed."""
    job = runner.find_job(job_id)
    kind = find_kind(job.kind)
    may_rerun = kind is not None and roles.has_perm(request.user, kind.permission)
    context = {"job": job, "kind": kind, "may_rerun": may_rerun}
    if job.status == Job.Status.SUCCEEDED and isinstance(job.result, dict):
        context.update(_result_context(kind, job))
    return render(request, "jobs/detail.html", context)


def _result_context(kind: JobKind | None, job: Job) -> dict:
    """The kind's result template and context, or the generic table of fields."""
    arguments = job.arguments if isinstance(job.arguments, dict) else {}
    fields = [(name, _field_text(value)) for name, value in job.result.items()]
    context = {"result_template": GENERIC_RESULT, "result_fields": fields}
    if kind is not None and kind.result_template:
        context["result_template"] = kind.result_template
        context.update(kind.result_context(arguments, job.result))
    return context


def _field_text(value) -> str:
    """One result field in words: a list as its items, a mapping as ``name value`` pairs."""
    if isinstance(value, dict):
        return "; ".join(f"{name} {_field_text(item)}" for name, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_field_text(item) for item in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return "–" if value is None else str(value)


@staff_only
def job_status(request: HttpRequest, job_id: int) -> JsonResponse:
    """The job's state as JSON, for the page to poll."""
    job = runner.find_job(job_id)
    fields = ("status", "done", "total", "percent", "message", "error", "finished")
    return JsonResponse({"id": job.pk, **{name: getattr(job, name) for name in fields}})


@require_POST
@staff_only
def job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    """Queue a failed job again with the same arguments."""
    job = runner.find_job(job_id)
    _startable(request.user, job.kind)
    with (refusal := Refusal(only=runner.JobError)):
        again = runner.retry(job, request.user)
        return redirect("job-detail", job_id=again.pk)
    return render(request, "jobs/detail.html", {"job": job, "problem": refusal.message}, status=409)


@staff_only
def job_output(request: HttpRequest, job_id: int) -> FileResponse:
    """The file a finished job wrote, to those who may start that kind of job."""
    job = runner.find_job(job_id, finished=True)
    _startable(request.user, job.kind)
    root = Path(settings.FIREPOOL_JOB_OUTPUT_DIR).resolve()
    path = Path(job.output).resolve() if job.output else None
    if path is None or not path.is_relative_to(root) or not path.is_file():
        raise Http404("this job left no file")
    name = (job.result or {}).get("filename") or path.name
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FileResponse(
        path.open("rb"), as_attachment=True, filename=name, content_type=content_type
    )
