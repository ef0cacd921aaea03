"""Count failed logins in the cache and refuse further attempts once a limit is reached.

Two counters, each living for ``FIREPOOL_LOGIN_WINDOW_SECONDS`` from its first count: one
per username and client address (``FIREPOOL_LOGIN_FAILURES_PER_USER``, to slow guessing one
account's password) and one per client address (``FIREPOOL_LOGIN_FAILURES_PER_IP``, to slow
trying many accounts). Every attempt is counted before its password is checked and a
successful one is taken back, so the counters hold failures. A successful login also clears
the username's counter for that address, never the address's own. The counters are
:mod:`config.attempt_counts`, in the database: every worker adds to the same ones, and a
burst of parallel attempts gets exactly the limit's worth of tries.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest

from config import attempt_counts


@dataclass(frozen=True)
class Limits:
    """How many failures are allowed per username and address, and per address, in a window."""

    per_user: int
    per_ip: int
    window: int


def limits() -> Limits:
    """The limits from settings (defaults: 5 and 50 failures in 300 seconds)."""
    return Limits(
        per_user=getattr(settings, "FIREPOOL_LOGIN_FAILURES_PER_USER", 5),
        per_ip=getattr(settings, "FIREPOOL_LOGIN_FAILURES_PER_IP", 50),
        window=getattr(settings, "FIREPOOL_LOGIN_WINDOW_SECONDS", 300),
    )


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or X-Forwarded-For as written by trusted proxies.

    With ``FIREPOOL_TRUSTED_PROXIES = n`` the n-th address from the right of X-Forwarded-For
    is the client (each proxy appends the address it saw; the ones to its left are the
    client's own claims and could be forged).
    """
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
    """Count a login attempt before its password is checked; seconds to wait if refused, else 0.

    Counting first (atomically, see :mod:`config.attempt_counts`) means a burst of parallel
    guesses cannot all slip in before the first failure is recorded; :func:`succeeded`
    takes a successful attempt back off the counters.
    """
    chosen = limits()
    user_key, ip_key = _keys(request, username)
    for key, limit in ((ip_key, chosen.per_ip), (user_key, chosen.per_user)):
        count = attempt_counts.add(key, chosen.window)
        if count.number > limit:
            return count.seconds_left()
    return 0


def succeeded(request: HttpRequest, username: str) -> None:
    """Forget the username's attempts from this client and give the address its attempt back."""
    user_key, ip_key = _keys(request, username)
    attempt_counts.forget(user_key)
    attempt_counts.take_back(ip_key)
