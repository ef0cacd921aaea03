"""API permissions by role (see :mod:`annotation.roles`)."""

from rest_framework.permissions import BasePermission

from annotation import roles


class IsAnnotator(BasePermission):
    """Annotators (and admins) may judge."""

    message = "Only annotators can judge pairs."

    def has_permission(self, request, view) -> bool:
        return roles.has_role(request.user, roles.ANNOTATOR) or roles.has_role(
            request.user, roles.ADMIN
        )


class IsResearcherOrAdmin(BasePermission):
    """Researchers read campaigns and reports; admins do everything."""

    message = "Only researchers and admins can see campaigns."

    def has_permission(self, request, view) -> bool:
        return roles.has_role(request.user, roles.RESEARCHER) or roles.has_role(
            request.user, roles.ADMIN
        )
