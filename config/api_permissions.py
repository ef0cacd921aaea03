"""API permissions: the role permissions of :mod:`config.roles`, asked the DRF way."""

from rest_framework.permissions import BasePermission


class HasPermission(BasePermission):
    """Let in users holding ``permission`` (a subclass names it and the refusal's message)."""

    permission = ""

    def has_permission(self, request, view) -> bool:
        return request.user.has_perm(self.permission)
