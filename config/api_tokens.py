"""Named API tokens: make one (its key shown once), list, revoke, and authenticate with it.
Keys are random (240 bits) and only their SHA-256 is stored, so a stolen database holds no
working key and a request finds its token in one indexed lookup (DRF's authtoken keeps one
plain key per user; knox has no names). Keys from ``drf_create_token`` stay valid."""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from drf_spectacular.authentication import TokenScheme
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
    """Make a token called ``name`` for ``user``; return it and its key (shown only now)."""
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
    """Delete the user's token ``token_id`` and any DRF key of theirs with the same digest;
    return its name, or None if the user has no such token."""
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
    """A key that opens nothing: a 401 with a ``Token`` challenge (DRF would answer 403, the
    session authenticator coming first), so a script hears its key, not its role, is wrong."""

    status_code = 401
    default_detail = "Invalid or revoked token."
    default_code = "authentication_failed"
    auth_header = "Token"


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>`` against the named tokens (by digest), then DRF's table."""

    def authenticate(self, request):
        # A view that names ``token_actions`` takes a token for those actions only (creating a
        # campaign, not judging); listed after the session, this is asked only when no session
        # answered, so a judging request never reaches it.
        view = (getattr(request, "parser_context", None) or {}).get("view")
        actions = getattr(view, "token_actions", None)
        if actions is not None and getattr(view, "action", None) not in actions:
            return None
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


class ScopedTokenScheme(TokenScheme):
    """The API schema's word for :class:`TokenAuthentication`: on a view that names
    ``token_actions``, a token only on those actions' operations."""

    target_class = "config.api_tokens.TokenAuthentication"
    match_subclasses = False
    priority = 1

    def get_security_requirement(self, auto_schema):
        view = auto_schema.view
        actions = getattr(view, "token_actions", None)
        if actions is not None and getattr(view, "action", None) not in actions:
            return None
        return super().get_security_requirement(auto_schema)


SCRIPT_AUTHENTICATION = [authentication.SessionAuthentication, TokenAuthentication]
"""A browser's session or a script's ``Authorization: Token <key>``; the session comes first, so
an anonymous request is a 403 as elsewhere in the API, not a token challenge's 401."""
