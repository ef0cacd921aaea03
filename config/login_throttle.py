"""Failed-login limits: per username and client address, and per address, within
``FIREPOOL_LOGIN_WINDOW_SECONDS``. Every attempt is counted (:mod:`config.attempt_counts`)
before its password is checked and a successful one taken back, so parallel guesses get
exactly the limit's worth of tries."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.http import HttpRequest

from config import attempt_counts


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or with ``FIREPOOL_TRUSTED_PROXIES = n`` the n-th
    address from the right of X-Forwarded-For (those further left could be forged)."""
    proxies = getattr(settings, "FIREPOOL_TRUSTED_PROXIES", 0)
    if proxies > 0:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if len(hops) >= proxies:
            return hops[-proxies]
    return request.META.get("REMOTE_ADDR", "")


def _key(kind: str, *values: str) -> str:
    digest = hashlib.sha256("\x00".join(values).encode()).hexdigest()
    return f"login-attempts:{kind}:{digest}"


def _keys(request: HttpRequest, username: str) -> tuple[str, str]:
    """The (username and address, address) counter keys of a login attempt."""
    ip = client_ip(request)
    return _key("user", username.strip().casefold(), ip), _key("ip", ip)


def check_attempt(request: HttpRequest, username: str) -> int:
    """Count a login attempt before its password is checked; seconds to wait if refused, else 0
    (by default over 50 failures per address or 5 per username and address in 300 seconds)."""
    user_key, ip_key = _keys(request, username)
    window = getattr(settings, "FIREPOOL_LOGIN_WINDOW_SECONDS", 300)
    for key, limit in (
        (ip_key, getattr(settings, "FIREPOOL_LOGIN_FAILURES_PER_IP", 50)),
        (user_key, getattr(settings, "FIREPOOL_LOGIN_FAILURES_PER_USER", 5)),
    ):
        count = attempt_counts.add(key, window)
        if count.number > limit:
            return count.seconds_left()
    return 0


def succeeded(request: HttpRequest, username: str) -> None:
    """Forget the username's attempts from this client and give the address its attempt back."""
    user_key, ip_key = _keys(request, username)
    attempt_counts.forget(user_key)
    attempt_counts.take_back(ip_key)
