"""Label sets in the admin (rename, default, delete) and the default's rules in the service."""

import importlib

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from config.roles import RESEARCHER, ensure_groups
from retrieval.datasets.names import InvalidName
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import make_default, store_label_set
from retrieval.models import Dataset, LabelSet

CHANGELIST = "/admin/retrieval/labelset/"


def store(dataset, name, **extra):
    return store_label_set(dataset, name, Judged.build([1], [2], [1]), source="jsonl", **extra)


@pytest.fixture
def sets(db):
    """Two datasets; "a" has three sets (a1 the default, a2 from campaign 7), "b" one."""
    a = Dataset.objects.create(name="a")
    b = Dataset.objects.create(name="b")
    return {
        "a1": store(a, "a1"),
        "a2": store(a, "a2", metadata={"campaign": "first", "campaign_id": 7}),
        "a3": store(a, "a3"),
        "b1": store(b, "b1"),
    }


@pytest.fixture
def admin_client(client, db):
    client.force_login(
        get_user_model().objects.create_superuser("root", "r@example.org", "pw-root-123")
    )
    return client


def defaults():
    return sorted(LabelSet.objects.filter(is_default=True).values_list("name", flat=True))


def test_first_set_of_a_dataset_is_its_default_and_later_ones_are_not(sets):
    assert defaults() == ["a1", "b1"]
    # Replacing the default keeps it the default; replacing another does not promote it.
    store(sets["a1"].dataset, "a1", replace=True)
    a3 = store(sets["a1"].dataset, "a3", replace=True)
    assert defaults() == ["a1", "b1"]
    make_default(a3)
    assert defaults() == ["a3", "b1"]
    with pytest.raises(IntegrityError), transaction.atomic():
        LabelSet.objects.filter(name="a2").update(is_default=True)


def test_migration_keeps_the_newest_set_as_default(sets):
    LabelSet.objects.update(is_default=False)
    migration = importlib.import_module("retrieval.migrations.0004_label_set_default")
    migration.newest_becomes_default(apps, None)
    assert defaults() == ["a3", "b1"]


def test_admin_renames_and_refuses_a_taken_or_bad_name(admin_client, sets):
    url = f"{CHANGELIST}{sets['a2'].pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200 and b'name="name"' in page.content
    response = admin_client.post(url, {"name": "  pooled-v2 ", "description": "renamed"})
    assert response.status_code == 302
    renamed = LabelSet.objects.get(pk=sets["a2"].pk)
    assert (renamed.name, renamed.description) == ("pooled-v2", "renamed")
    assert renamed.dataset.name == "a" and renamed.pair_count == 1  # the rest is read-only
    taken = admin_client.post(url, {"name": "a1", "description": ""})
    assert taken.status_code == 200 and b"already has a label set" in taken.content
    blank = admin_client.post(url, {"name": "   ", "description": ""})
    assert blank.status_code == 200
    assert LabelSet.objects.get(pk=sets["a2"].pk).name == "pooled-v2"
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403


def test_admin_action_makes_a_set_the_default(admin_client, sets):
    response = admin_client.post(
        CHANGELIST, {"action": "make_default", "_selected_action": [sets["a3"].pk]}, follow=True
    )
    assert b"Now the default: a/a3" in response.content
    assert defaults() == ["a3", "b1"]
    # Two sets of one dataset cannot both be its default: nothing changes.
    response = admin_client.post(
        CHANGELIST,
        {"action": "make_default", "_selected_action": [sets["a1"].pk, sets["a2"].pk]},
        follow=True,
    )
    assert b"one label set per dataset" in response.content
    assert defaults() == ["a3", "b1"]


def test_delete_confirmation_lists_what_depends_on_the_set(admin_client, sets):
    page = admin_client.get(f"{CHANGELIST}{sets['a1'].pk}/delete/").content.decode()
    assert 'id="label-set-dependants"' in page
    assert "the report of dataset &#x27;a&#x27; uses it by default" in page
    plain = admin_client.get(f"{CHANGELIST}{sets['a3'].pk}/delete/").content.decode()
    assert 'id="label-set-dependants"' not in plain and "Are you sure" in plain
    bulk = admin_client.post(
        CHANGELIST,
        {"action": "delete_selected", "_selected_action": [sets["a2"].pk, sets["b1"].pk]},
    ).content.decode()
    assert "campaign &#x27;first&#x27; (id 7) was resolved into it" in bulk
    assert "the report of dataset &#x27;b&#x27; uses it by default" in bulk
    assert LabelSet.objects.count() == 4  # only asked so far
    response = admin_client.post(
        CHANGELIST,
        {"action": "delete_selected", "_selected_action": [sets["a2"].pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert not LabelSet.objects.filter(pk=sets["a2"].pk).exists()
    response = admin_client.post(f"{CHANGELIST}{sets['a1'].pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert defaults() == ["b1"]  # no set is promoted behind the admin's back
    # The dataset has no default now: its next set becomes it.
    assert store(sets["a3"].dataset, "a4").is_default


def test_researchers_see_label_sets_but_cannot_change_them(client, sets):
    user = get_user_model().objects.create_user("res", password="pw-research-1", is_staff=True)
    user.groups.add(ensure_groups()[RESEARCHER])
    client.force_login(user)
    assert client.get(CHANGELIST).status_code == 200
    url = f"{CHANGELIST}{sets['a2'].pk}/change/"
    client.post(url, {"name": "hijacked", "description": ""})
    assert LabelSet.objects.get(pk=sets["a2"].pk).name == "a2"
    assert client.get(f"{CHANGELIST}{sets['a2'].pk}/delete/").status_code == 403


def test_store_refuses_names_it_cannot_use(sets):
    with pytest.raises(InvalidName, match="the label set name '  ' is only blanks"):
        store(sets["a1"].dataset, "  ")
