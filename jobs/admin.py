"""Jobs in the admin site, where admins can read a failed job's traceback."""

from django.contrib import admin

from jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "description", "created_by", "created_at")
    list_filter = ("status", "kind", "queue")
    readonly_fields = [field.name for field in Job._meta.fields]
