"""Named API tokens: make one (its key shown once), list, revoke, and authenticate with it.

DRF's own ``authtoken`` keeps one plain-text key per user, made on the server with
``manage.py drf_create_token``. A researcher without a shell needs several named keys, made
and revoked on a page, and a stolen copy of the database should not hold working keys, so
keys are random (``secrets``, 240 bits) and only their SHA-256 digest is stored: a fast hash
suffices for a key with that much entropy (no dictionary to guess from), and it lets a
request find its token with one indexed lookup. django-rest-knox stores digests too but has
no names or last use, so this small model (:class:`config.models.ApiToken`) is the project's
own. Keys made earlier by ``drf_create_token`` stay valid (:class:`TokenAuthentication`
falls back to DRF's table) and the migration copied the existing ones here.
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from config.errors import UserError
from config.models import ApiToken
from config.text_rule import text_problem

KEY_PREFIX = "fp_"
"""Every key made here starts so: a reader (or a secret scanner) tells it from other keys."""
MAX_TOKENS = 20
"""Tokens one user may hold at once: enough for every script, and a bound on the table."""
NAME_LENGTH = 100
LAST_USED_EVERY = timedelta(minutes=1)
"""A token's last use is written at most this often, so a busy script adds few writes."""


class TokenError(UserError):
    """A token name that is empty, too long or taken, or too many tokens."""


@dataclass(frozen=True)
class TokenRow:
    """One token as the page lists it (never its key)."""

    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None


def digest(key: str) -> str:
    """The stored form of a key: its SHA-256, in hex."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def tokens_of(user) -> list[TokenRow]:
    """The user's tokens, newest first."""
    rows = ApiToken.objects.filter(user=user).values_list(
        "pk", "name", "prefix", "created_at", "last_used_at"
    )
    return [TokenRow(*row) for row in rows]


def create(user, name: str) -> tuple[TokenRow, str]:
    """Make a token called ``name`` for ``user``; return it and its key, which is not stored
    and so can be shown only now."""
    name = " ".join(str(name).split())
    if not name:
        raise TokenError("Give the token a name, e.g. the script or machine that will use it.")
    problem = text_problem(name, NAME_LENGTH)
    if problem is not None:
        raise TokenError(f"The token name {problem}.")
    key = KEY_PREFIX + secrets.token_urlsafe(30)
    with transaction.atomic():
        if ApiToken.objects.filter(user=user).count() >= MAX_TOKENS:
            raise TokenError(f"You hold {MAX_TOKENS} tokens already: revoke one first.")
        try:
            with transaction.atomic():
                token = ApiToken.objects.create(
                    user=user, name=name, digest=digest(key), prefix=key[:8]
                )
        except IntegrityError:
            raise TokenError(f"You have a token called {name!r} already.") from None
    return TokenRow(token.pk, token.name, token.prefix, token.created_at, None), key


def revoke(user, token_id: int) -> str | None:
    """Delete the user's token ``token_id`` (another user's is left alone) and any DRF key of
    the user's with the same digest (a migrated one); return its name, or None if none."""
    token = ApiToken.objects.filter(user=user, pk=token_id).first()
    if token is None:
        return None
    with transaction.atomic():
        for legacy in Token.objects.filter(user=user):
            if digest(legacy.key) == token.digest:
                legacy.delete()
        token.delete()
    return token.name


class InvalidToken(exceptions.APIException):
    """A key that opens nothing (never made, revoked, malformed, or its user inactive): a 401
    with a ``Token`` challenge. DRF would make its own ``AuthenticationFailed`` a 403 here,
    since the session comes first among the API's authenticators and has no challenge; a
    script whose key was revoked should hear that its key, not its role, is wrong."""

    status_code = 401
    default_detail = "Invalid or revoked token."
    default_code = "authentication_failed"
    auth_header = "Token"


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>`` against the named tokens (by digest), then against
    DRF's own table for keys ``drf_create_token`` made. A key that opens nothing is a 401."""

    def authenticate(self, request):
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed as failed:
            raise InvalidToken(failed.detail) from None

    def authenticate_credentials(self, key: str):
        token = ApiToken.objects.select_related("user").filter(digest=digest(key)).first()
        if token is None:
            if key.startswith(KEY_PREFIX):
                raise exceptions.AuthenticationFailed("Invalid or revoked token.")
            return super().authenticate_credentials(key)
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
