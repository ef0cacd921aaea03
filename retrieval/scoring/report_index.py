"""The reports index: where the navigation's "Reports" leads, every dataset's report,
leaderboard and judging-order comparison, and each of its label sets to read them with."""

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from config.roles import VIEW_REPORTS, permission_required
from retrieval.models import Dataset, LabelSet


@permission_required(VIEW_REPORTS, "Only researchers and admins can see reports.")
def reports(request: HttpRequest) -> HttpResponse:
    """Every dataset with links to its reports, read with its default labels or any set."""
    sets = LabelSet.objects.defer("arrays").order_by("name")
    datasets = Dataset.objects.only("name", "has_ground_truth").prefetch_related(
        Prefetch("label_sets", queryset=sets)
    )
    return render(request, "retrieval/reports.html", {"datasets": datasets})
