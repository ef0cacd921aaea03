"""Jobs in the admin site, where admins can read a failed job's traceback."""

from django.contrib import admin

from config import roles
from jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "description", "created_by", "created_at")
    list_filter = ("status", "kind", "queue")
    readonly_fields = [field.name for field in Job._meta.fields]

    def get_fields(self, request, obj=None):
        """Every field, but a traceback only for admins (``start_admin_job``): researchers
        read jobs here too, and pages never show one."""
        fields = super().get_fields(request, obj)
        if roles.has_perm(request.user, roles.START_ADMIN_JOB):
            return fields
        return [name for name in fields if name != "traceback"]
