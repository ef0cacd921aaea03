"""The role permissions: what each group holds, one query pair per request, the nav asks the same."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config import roles
from tests.factories import make_campaign

ROLE_PERMISSIONS = {
    roles.ANNOTATOR: {roles.JUDGE_PAIRS},
    roles.RESEARCHER: {
        roles.VIEW_CAMPAIGN_REPORTS,
        roles.VIEW_REPORTS,
        roles.VIEW_JOBS,
        roles.START_RESEARCH_JOB,
        roles.VIEW_VIDEOS,
    },
    roles.ADMIN: {
        roles.JUDGE_PAIRS,
        roles.VIEW_CAMPAIGN_REPORTS,
        roles.MANAGE_CAMPAIGNS,
        roles.VIEW_REPORTS,
        roles.VIEW_JOBS,
        roles.START_RESEARCH_JOB,
        roles.START_ADMIN_JOB,
        roles.VIEW_VIDEOS,
    },
}
EVERY_ROLE_PERMISSION = set().union(*ROLE_PERMISSIONS.values())


def member(role: str):
    user = get_user_model().objects.create_user(f"m-{role}", password="pw-member-12345")
    user.groups.add(roles.ensure_groups()[role])
    return get_user_model().objects.get(pk=user.pk)  # no permission cache yet


@pytest.mark.django_db
@pytest.mark.parametrize("role", roles.ROLES)
def test_each_role_holds_exactly_its_role_permissions(role):
    user = member(role)
    held = {name for name in EVERY_ROLE_PERMISSION if user.has_perm(name)}
    assert held == ROLE_PERMISSIONS[role]


@pytest.mark.django_db
def test_superusers_hold_every_role_permission_without_a_query():
    root = get_user_model().objects.create_superuser("root", password="pw-root-123456")
    with CaptureQueriesContext(connection) as queries:
        assert all(root.has_perm(name) for name in EVERY_ROLE_PERMISSION)
    assert len(queries) == 0


@pytest.mark.django_db
def test_a_users_permissions_are_read_once_then_cached():
    user = member(roles.RESEARCHER)
    with CaptureQueriesContext(connection) as first:
        user.has_perm(roles.JUDGE_PAIRS)
    with CaptureQueriesContext(connection) as later:
        for name in EVERY_ROLE_PERMISSION:
            user.has_perm(name)
    assert len(first) == 2  # the user's own permissions and their groups'
    assert len(later) == 0


@pytest.mark.django_db
def test_a_page_asks_the_database_for_permissions_once(client):
    """The campaigns page checks several permissions (view, nav, admin actions) per request:
    the set comes with the request's user, in the statement that reads the user."""
    client.force_login(member(roles.RESEARCHER))
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/campaigns/").status_code == 200
    permission_queries = [q for q in queries if "auth_permission" in q["sql"]]
    assert len(permission_queries) == 1
    assert "auth_user" in permission_queries[0]["sql"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("role", "page", "shown", "hidden"),
    [
        (roles.ANNOTATOR, "/judge/", {"/judge/"}, {"/campaigns/", "/label-sets/", "/jobs/"}),
        (
            roles.RESEARCHER,
            "/campaigns/",
            {"/campaigns/", "/label-sets/", "/jobs/"},
            {'href="/judge/"'},
        ),
    ],
)
def test_the_nav_links_what_the_role_may_open(client, role, page, shown, hidden):
    client.force_login(member(role))
    nav = client.get(page).content.decode().split("</nav>")[0]
    assert all(f'href="{url}"' in nav for url in shown)
    assert not any(url in nav for url in hidden)


@pytest.mark.django_db
def test_only_campaign_managers_see_the_campaign_actions(client):
    campaign = make_campaign()
    adjudicate = f'href="/campaigns/{campaign.pk}/adjudicate/"'
    client.force_login(member(roles.RESEARCHER))
    assert adjudicate not in client.get("/campaigns/").content.decode()
    client.force_login(member(roles.ADMIN))
    assert adjudicate in client.get("/campaigns/").content.decode()


@pytest.mark.django_db
def test_every_permission_the_roles_module_names_exists():
    from django.contrib.auth.models import Permission

    roles.ensure_groups()
    named = {
        value
        for name, value in vars(roles).items()
        if name.isupper() and isinstance(value, str) and "." in value
    }
    existing = {
        f"{app}.{codename}"
        for app, codename in Permission.objects.values_list("content_type__app_label", "codename")
    }
    assert named and named <= existing, named - existing
    assert {permission for permission, _ in roles.OBJECT_RULES} <= named


@pytest.mark.django_db
def test_a_scoring_job_passes_the_object_rule_only_for_its_uploader_or_an_admin():
    from jobs.models import Job

    uploader = member(roles.RESEARCHER)
    other = get_user_model().objects.create_user("m-researcher-2", password="pw-member-12345")
    other.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    admin = member(roles.ADMIN)
    annotator = member(roles.ANNOTATOR)
    job = Job.objects.create(kind="score_run", created_by=uploader)
    assert roles.has_perm(uploader, roles.SCORE_RUNS, job)
    assert roles.has_perm(admin, roles.SCORE_RUNS, job)
    assert not roles.has_perm(other, roles.SCORE_RUNS, job)
    assert roles.has_perm(other, roles.SCORE_RUNS)  # the model-level permission stays
    assert not roles.has_perm(annotator, roles.SCORE_RUNS, job)
    # A permission with no rule for the object's model is the model-level answer.
    assert roles.has_perm(other, roles.VIEW_JOBS, job)
    assert not roles.has_perm(annotator, roles.VIEW_JOBS, job)
