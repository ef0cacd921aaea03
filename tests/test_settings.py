"""Deployment settings: `check --deploy` is clean when production variables are set."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent


def _manage(*args, env_extra, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    env.update({"FIREPOOL_VAR_DIR": str(tmp_path), **env_extra})
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_check_deploy_clean_under_production_env(tmp_path):
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env_extra={
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "firepool.example.org",
        },
        tmp_path=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_requires_secret_key(tmp_path):
    result = _manage("check", env_extra={"DJANGO_DEBUG": "0"}, tmp_path=tmp_path)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_an_unknown_media_server_stops_the_start(tmp_path):
    result = _manage("check", env_extra={"FIREPOOL_MEDIA_SERVER": "apache"}, tmp_path=tmp_path)
    assert result.returncode != 0
    assert "FIREPOOL_MEDIA_SERVER must be one of django, nginx, not 'apache'" in result.stderr


def test_sqlite_default_uses_wal(db):
    from django.db import connection

    if connection.vendor != "sqlite":
        return
    assert settings.DATABASES["default"]["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in settings.DATABASES["default"]["OPTIONS"]["init_command"]


def test_demo_users_and_roles(db):
    call_command("create_demo_users", verbosity=0)
    users = get_user_model().objects.order_by("username")
    assert [u.username for u in users] == [
        "admin",
        "annotator1",
        "annotator2",
        "annotator3",
        "researcher",
    ]
    admin = users.get(username="admin")
    assert admin.is_superuser and admin.check_password("firepool-admin")
    annotator = users.get(username="annotator1")
    assert not annotator.is_staff
    assert list(annotator.groups.values_list("name", flat=True)) == ["annotator"]
    # Running again keeps accounts (no duplicates, passwords untouched).
    annotator.set_password("changed-by-user-1")
    annotator.save()
    call_command("create_demo_users", verbosity=0)
    assert get_user_model().objects.count() == 5
    assert users.get(username="annotator1").check_password("changed-by-user-1")


def test_login_page_public_home_requires_login(client, db):
    assert client.get("/login/").status_code == 200
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def _database_options(tmp_path, **env) -> str:
    """The default database's OPTIONS the settings build for ``env`` (no connection made)."""
    shown = "from django.conf import settings; print(settings.DATABASES['default'].get('OPTIONS'))"
    result = _manage("shell", "-c", shown, env_extra=env, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_postgresql_prepares_statements_by_default_and_can_be_told_not_to(tmp_path):
    url = "postgres://firepool:pw@127.0.0.1:5432/firepool"
    options = _database_options(tmp_path, DATABASE_URL=url)
    assert "'server_side_binding': True" in options and "'prepare_threshold': 5" in options
    off = _database_options(tmp_path, DATABASE_URL=url, DATABASE_PREPARED="0")
    assert "server_side_binding" not in off and "prepare_threshold" not in off
    # The URL's own options win over the default.
    mine = _database_options(tmp_path, DATABASE_URL=url + "?prepare_threshold=2")
    assert "'prepare_threshold': 2" in mine
    assert "server_side_binding" not in _database_options(tmp_path)  # SQLite: nothing of this


def test_djangos_own_info_lines_are_printed_once(tmp_path):
    """runserver printed "Watching for file changes" twice under ``make run``: Django's
    console handler printed it, and the record went on up to the root's handler too."""
    script = (
        "import django, logging; django.setup(); "
        "logging.getLogger('django.utils.autoreload').info('watching once')"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    env.update({"FIREPOOL_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"})
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert (result.stdout + result.stderr).count("watching once") == 1
