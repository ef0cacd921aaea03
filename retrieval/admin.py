"""Django admin for datasets, videos, captions and label sets."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import actions
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.html import format_html

from config.subqueries import row_count
from retrieval.datasets.names import InvalidName
from retrieval.forms import NameValidator
from retrieval.label_sets.service import LabelSetError, check_rename, dependants, make_default
from retrieval.media.service import segment_label
from retrieval.models import Caption, Dataset, LabelSet, Video


class NameRuleAdmin(admin.ModelAdmin):
    """An admin whose ``name`` field follows the name rule, for the thing ``named``."""

    named = ""

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "name" and field is not None:
            field.validators.append(NameValidator(self.named))
        return field


@admin.register(Dataset)
class DatasetAdmin(NameRuleAdmin):
    named = "dataset"
    list_display = ["name", "source_format", "has_ground_truth", "video_count", "caption_count"]
    search_fields = ["name", "description"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        """The counts read with the list, one query for the page rather than two per row."""
        return (
            super()
            .get_queryset(request)
            .annotate(
                videos_n=row_count(Video.objects.all(), "dataset"),
                captions_n=row_count(Caption.objects.all(), "dataset"),
            )
        )

    @admin.display(description="videos", ordering="videos_n")
    def video_count(self, obj: Dataset) -> int:
        return obj.videos_n

    @admin.display(description="captions", ordering="captions_n")
    def caption_count(self, obj: Dataset) -> int:
        return obj.captions_n


class CaptionInline(admin.TabularInline):
    model = Caption
    fields = ["key", "text", "split", "is_query"]
    extra = 0
    show_change_link = True


@admin.register(Video)
class VideoAdmin(admin.ModelAdmin):
    list_display = ["thumbnail", "key", "dataset", "split", "duration", "start", "end"]
    list_filter = ["dataset", "split"]
    search_fields = ["key"]
    list_select_related = ["dataset"]
    readonly_fields = ["player"]
    fields = "player dataset key split media url duration start end features metadata".split()
    inlines = [CaptionInline]

    @admin.display(description="")
    def thumbnail(self, obj: Video) -> str:
        if not obj.poster_url:
            return ""
        return format_html('<img src="{}" alt="" width="96" loading="lazy">', obj.poster_url)

    @admin.display(description="preview")
    def player(self, obj: Video) -> str:
        src = obj.source_url
        if not src:
            return "browser file not ready" if obj.media else "no media"
        return format_html(
            '<video src="{}{}" width="256" controls muted loop autoplay preload="auto"></video>'
            "<div>{}</div>",
            src,
            obj.media_fragment,
            segment_label(obj),
        )


@admin.register(Caption)
class CaptionAdmin(admin.ModelAdmin):
    list_display = ["key", "text", "video", "split", "is_query", "dataset"]
    list_filter = ["dataset", "split", "is_query"]
    search_fields = ["key", "text"]
    list_select_related = ["dataset", "video"]
    raw_id_fields = ["video"]


class LabelSetForm(forms.ModelForm):
    """Rename a label set, or change its description; its pairs come only from imports."""

    class Meta:
        model = LabelSet
        fields = ["name", "description"]

    def clean_name(self) -> str:
        try:
            return check_rename(self.instance, self.cleaned_data["name"])
        except (LabelSetError, InvalidName) as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(LabelSet)
class LabelSetAdmin(admin.ModelAdmin):
    """Rename label sets, choose each dataset's default, and delete them after a look at what
    depends on them (the delete confirmation lists it)."""

    form = LabelSetForm
    list_display = ["name", "dataset", "source", "pair_count", "relevant_count", "is_default"]
    list_filter = ["dataset", "source", "is_default"]
    search_fields = ["name", "description"]
    list_select_related = ["dataset"]
    fields = (
        "name description dataset source is_default pair_count relevant_count irrelevant_count "
        "disagreement_count metadata created_at"
    ).split()
    readonly_fields = fields[2:]
    actions = ["make_default", "delete_selected"]
    delete_confirmation_template = "retrieval/admin/labelset_delete_confirmation.html"
    delete_selected_confirmation_template = (
        "retrieval/admin/labelset_delete_selected_confirmation.html"
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).defer("arrays")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by importing a file or resolving a campaign

    @admin.action(permissions=["change"], description="Make the default of its dataset's report")
    def make_default(self, request: HttpRequest, queryset: QuerySet) -> None:
        chosen = list(queryset.select_related("dataset"))
        datasets = [label_set.dataset_id for label_set in chosen]
        if len(set(datasets)) != len(datasets):
            self.message_user(
                request, "Choose one label set per dataset as its default.", messages.ERROR
            )
            return
        for label_set in chosen:
            make_default(label_set)
        names = ", ".join(str(label_set) for label_set in chosen)
        self.message_user(request, f"Now the default: {names}.", messages.SUCCESS)

    @admin.action(permissions=["delete"], description="Delete selected label sets")
    def delete_selected(self, request: HttpRequest, queryset: QuerySet):
        """Django's bulk delete, whose confirmation also lists what depends on the sets."""
        response = actions.delete_selected(self, request, queryset)
        if isinstance(response, TemplateResponse):
            response.context_data["dependants"] = dependants(queryset.select_related("dataset"))
        return response

    def delete_view(self, request: HttpRequest, object_id: str, extra_context=None):
        label_set = self.get_object(request, unquote(object_id))
        found = dependants([label_set]) if label_set is not None else []
        return super().delete_view(
            request, object_id, {**(extra_context or {}), "dependants": found}
        )
