"""Permissions of the judging API, on :mod:`config.roles`' permissions."""

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
