"""Django admin for datasets, videos and captions."""

from django.contrib import admin
from django.utils.html import format_html

from retrieval.models import Caption, Dataset, Video


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "source_format", "has_ground_truth", "video_count", "caption_count"]
    search_fields = ["name", "description"]

    @admin.display(description="videos")
    def video_count(self, obj: Dataset) -> int:
        return obj.videos.count()

    @admin.display(description="captions")
    def caption_count(self, obj: Dataset) -> int:
        return obj.captions.count()


class CaptionInline(admin.TabularInline):
    model = Caption
    fields = ["key", "text", "split", "is_query"]
    extra = 0
    show_change_link = True


@admin.register(Video)
class VideoAdmin(admin.ModelAdmin):
    list_display = ["key", "dataset", "split", "duration", "start", "end"]
    list_filter = ["dataset", "split"]
    search_fields = ["key"]
    list_select_related = ["dataset"]
    readonly_fields = ["player"]
    fields = [
        "player",
        "dataset",
        "key",
        "split",
        "media",
        "url",
        "duration",
        "start",
        "end",
        "features",
        "metadata",
    ]
    inlines = [CaptionInline]

    @admin.display(description="preview")
    def player(self, obj: Video) -> str:
        src = obj.source_url
        if not src:
            return "no media"
        return format_html(
            '<video src="{}" width="256" controls muted loop autoplay preload="auto"></video>', src
        )


@admin.register(Caption)
class CaptionAdmin(admin.ModelAdmin):
    list_display = ["key", "text", "video", "split", "is_query", "dataset"]
    list_filter = ["dataset", "split", "is_query"]
    search_fields = ["key", "text"]
    list_select_related = ["dataset", "video"]
    raw_id_fields = ["video"]
