"""Production settings: `check --deploy` is clean, and responses carry the security headers.

The header tests load ``config/settings.py`` again under a production environment and
apply its security settings in-process, so they check what a deployment really gets.
"""

import os
import re
import runpy
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

ROOT = Path(__file__).resolve().parent.parent
SECRET = secrets.token_urlsafe(50)
PRODUCTION = {
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": SECRET,
    "DJANGO_ALLOWED_HOSTS": "firepool.example.org,testserver",
}
SECURITY_SETTINGS = (
    "DEBUG",
    "ALLOWED_HOSTS",
    "SECURE_PROXY_SSL_HEADER",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_CONTENT_TYPE_NOSNIFF",
    "SECURE_REFERRER_POLICY",
    "SECURE_CROSS_ORIGIN_OPENER_POLICY",
    "X_FRAME_OPTIONS",
    "SESSION_COOKIE_SECURE",
    "SESSION_COOKIE_HTTPONLY",
    "SESSION_COOKIE_SAMESITE",
    "CSRF_COOKIE_SECURE",
    "CSRF_COOKIE_HTTPONLY",
    "CSRF_COOKIE_SAMESITE",
)


def _environment(tmp_path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "FIREPOOL_"))}
    env.pop("DATABASE_URL", None)
    env.update({"FIREPOOL_VAR_DIR": str(tmp_path), **PRODUCTION, **extra})
    return env


@pytest.mark.parametrize("cache_url", ["locmem://", "db://firepool_cache"])
def test_check_deploy_has_no_warnings(tmp_path, cache_url):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_environment(tmp_path, FIREPOOL_CACHE_URL=cache_url),
        capture_output=True,
        text=True,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output
    assert "WARNING" not in output and "ERROR" not in output


def production_settings(monkeypatch, **extra) -> dict:
    """The security settings ``config/settings.py`` gives under the production environment."""
    for name in [k for k in os.environ if k.startswith(("DJANGO_", "FIREPOOL_"))]:
        monkeypatch.delenv(name)
    for name, value in {**PRODUCTION, **extra}.items():
        monkeypatch.setenv(name, value)
    loaded = runpy.run_path(str(ROOT / "config" / "settings.py"))
    return loaded


@pytest.fixture
def production(monkeypatch):
    loaded = production_settings(monkeypatch)
    with override_settings(**{name: loaded[name] for name in SECURITY_SETTINGS if name in loaded}):
        yield loaded


def test_production_turns_the_secure_settings_on(production):
    assert production["DEBUG"] is False
    assert production["SECRET_KEY"] == SECRET
    assert production["SESSION_COOKIE_SECURE"] and production["CSRF_COOKIE_SECURE"]
    assert production["SESSION_COOKIE_HTTPONLY"] and production["CSRF_COOKIE_HTTPONLY"]
    assert production["SECURE_SSL_REDIRECT"] and production["SECURE_HSTS_SECONDS"] >= 31536000


def _assert_security_headers(response) -> None:
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response["Strict-Transport-Security"] == ("max-age=31536000; includeSubDomains; preload")


def _csrf_token(response) -> str:
    return re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', response.content)[1].decode()


def test_https_pages_carry_headers_and_secure_cookies(production, db):
    get_user_model().objects.create_user("carol", password="pw-carol-123456")
    client = Client(enforce_csrf_checks=True)
    page = client.get("/login/", secure=True)
    assert page.status_code == 200
    _assert_security_headers(page)
    csrf = page.cookies["csrftoken"]
    assert csrf["secure"] and csrf["httponly"] and csrf["samesite"] == "Lax"
    response = client.post(
        "/login/",
        {
            "username": "carol",
            "password": "pw-carol-123456",
            "csrfmiddlewaretoken": _csrf_token(page),
        },
        secure=True,
        HTTP_REFERER="https://testserver/login/",
    )
    assert response.status_code == 302
    _assert_security_headers(response)
    session = response.cookies["sessionid"]
    assert session["secure"] and session["httponly"] and session["samesite"] == "Lax"


def test_http_is_redirected_to_https_without_hsts(production, db):
    response = Client().get("/login/")
    assert response.status_code == 301
    assert response["Location"] == "https://testserver/login/"
    assert "Strict-Transport-Security" not in response


def test_https_behind_a_proxy_is_recognised(production, db):
    response = Client().get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200
    _assert_security_headers(response)


def test_api_and_error_pages_carry_headers_and_no_debug_output(production, db):
    client = Client()
    api = client.get("/api/campaigns/", secure=True)
    assert api.status_code == 403
    _assert_security_headers(api)
    missing = client.get("/no/such/page/", secure=True)
    assert missing.status_code == 404
    _assert_security_headers(missing)
    assert b"URLconf" not in missing.content and b"Traceback" not in missing.content


def test_request_size_limits_have_defaults_and_environment_overrides(monkeypatch):
    defaults = production_settings(monkeypatch)
    assert defaults["DATA_UPLOAD_MAX_MEMORY_SIZE"] == 5 * 1024 * 1024
    assert defaults["FILE_UPLOAD_MAX_MEMORY_SIZE"] == 5 * 1024 * 1024
    assert defaults["DATA_UPLOAD_MAX_NUMBER_FIELDS"] == 1000
    chosen = production_settings(
        monkeypatch,
        DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE="1000",
        DJANGO_FILE_UPLOAD_MAX_MEMORY_SIZE="2000",
        DJANGO_DATA_UPLOAD_MAX_NUMBER_FIELDS="30",
    )
    assert chosen["DATA_UPLOAD_MAX_MEMORY_SIZE"] == 1000
    assert chosen["FILE_UPLOAD_MAX_MEMORY_SIZE"] == 2000
    assert chosen["DATA_UPLOAD_MAX_NUMBER_FIELDS"] == 30


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000, DATA_UPLOAD_MAX_NUMBER_FIELDS=30)
def test_oversized_requests_are_refused(client, db):
    big = client.post("/login/", {"username": "x" * 2000, "password": "y"})
    assert big.status_code == 413  # with the limit, not a bare "Bad Request (400)"
    assert "over the limit of 1,000 bytes" in big.content.decode()
    many = client.post("/login/", {f"field{i}": "1" for i in range(40)})
    assert many.status_code == 400
    assert "too many fields: at most 30" in many.content.decode()
