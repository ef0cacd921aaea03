"""The label sets page, and the choice of a dataset's default label set."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.error_handling import Refusal
from config.roles import UPLOAD_DATASETS, VIEW_REPORTS, permission_required
from retrieval.datasets.lookup import get_dataset, label_sets_of
from retrieval.label_sets.service import choose_default


@permission_required(VIEW_REPORTS, "Only researchers and admins can see label sets.")
def label_sets(request: HttpRequest) -> HttpResponse:
    """The label sets re-scoring can use, from campaigns and imported files."""
    return _label_sets_page(request)


def _label_sets_page(request: HttpRequest, status: int = 200) -> HttpResponse:
    sets = label_sets_of()
    return render(request, "retrieval/label_sets.html", {"label_sets": sets}, status=status)


@require_POST
@permission_required(UPLOAD_DATASETS, "Only admins can choose a dataset's default label set.")
def choose_default_label_set(request: HttpRequest, dataset_name: str) -> HttpResponse:
    """Make the posted ``label_set`` the dataset's default (an admin's work on the dataset, as
    uploading is); an unknown name is a 400."""
    dataset = get_dataset(dataset_name)
    refusal = Refusal()
    with refusal:
        chosen = choose_default(dataset, request.POST.get("label_set", ""))
        messages.success(
            request, f"{chosen.name!r} is now the default label set of {dataset.name!r}."
        )
        return redirect("label-sets")
    messages.error(request, refusal.message)
    return _label_sets_page(request, status=400)
