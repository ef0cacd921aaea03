"""Permissions of the judging API, on :mod:`config.roles`' permissions."""

from rest_framework import permissions

from config import roles


class IsAnnotator(roles.HasPerm):
    """Those who may judge (the annotator and admin roles)."""

    permission = roles.JUDGE_PAIRS
    message = "Only annotators can judge pairs."


class CanViewCampaignReports(roles.HasPerm):
    """Those who may read campaigns' reports (the researcher and admin roles)."""

    permission = roles.VIEW_CAMPAIGN_REPORTS
    message = "Only researchers and admins can see campaign reports."


class CanManageCampaigns(roles.HasPerm):
    """Those who may create and change campaigns (the admin role): the New campaign page's."""

    permission = roles.MANAGE_CAMPAIGNS
    message = "Only admins can create campaigns."


class CampaignAccess(permissions.BasePermission):
    """The campaigns list and pages for anyone signed in; creating one for
    :class:`CanManageCampaigns` only."""

    def has_permission(self, request, view) -> bool:
        if getattr(view, "action", None) == "create":
            manage = CanManageCampaigns()
            self.message = manage.message
            return manage.has_permission(request, view)
        return bool(request.user and request.user.is_authenticated)
