"""Which file under the media root (or a ``datasets/<name>`` link) a request names, and whether
its user may fetch it: :data:`config.roles.VIEW_VIDEOS` any file the database knows, everyone
else what a registered grant allows (grants name originals; their derived files follow).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q

from config import roles
from retrieval.datasets.importing import LINK_DIR
from retrieval.media.delivery import DERIVED_DIR
from retrieval.models import AS_IS_POSTER_DIR, Video

GRANT_SECONDS = 300
"""How long a yes is remembered per user and file, so a video's Range requests stay cheap
(and so how long a right taken away with the data, such as a closed campaign's videos, may
still work; a role taken away stops at once)."""

Grant = Callable[[object, str], bool]
_grants: list[Grant] = []


def register_grant(grant: Grant) -> Grant:
    """Let ``grant(user, name)`` allow users without the view permission to fetch ``name``."""
    if grant not in _grants:
        _grants.append(grant)
    return grant


def media_file(name: str) -> Path | None:
    """The real path of media file ``name`` (relative, '/'-separated), or None if unsafe or absent."""
    parts = name.split("/")
    if not name or "\x00" in name or "\\" in name or any(p in ("", ".", "..") for p in parts):
        return None
    root = Path(settings.MEDIA_ROOT).resolve()
    try:
        real = (root / name).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symlink loop
        return None
    base = root
    if len(parts) > 2 and parts[0] == LINK_DIR and (root / LINK_DIR / parts[1]).is_symlink():
        base = (root / LINK_DIR / parts[1]).resolve()
    if not real.is_relative_to(base) or not real.is_file():
        return None
    return real


def may_fetch(user, name: str) -> bool:
    """True when ``user`` may fetch media file ``name`` (a known video, features or derived file)."""
    if not user.is_authenticated:
        return False
    # The session hash and the permissions tie the answer to this account as it is now (a
    # new password, a role taken away, or a new user that reuses a deleted one's id, starts
    # afresh); the permissions are the backend's cached set, so this costs no query.
    permissions = ",".join(sorted(user.get_all_permissions()))
    token = f"{user.pk}:{user.get_session_auth_hash()}:{permissions}:{name}"
    key = "media-grant:" + hashlib.sha256(token.encode()).hexdigest()
    if cache.get(key):
        return True
    derived = name.startswith(DERIVED_DIR + "/")
    # A poster (derived/ab/<key>.jpg) goes with its file (derived/ab/<key>.mp4); a poster
    # under derived/posters/ with the original file that plays as it is (its probe names it).
    names = [name, name[: -len(".jpg")] + ".mp4"] if derived and name.endswith(".jpg") else [name]
    if roles.has_perm(user, roles.VIEW_VIDEOS):
        known = Q(media=name) | Q(features=name) | Q(browser_media__in=names)
        if _as_is_poster(name):
            known = Q(probe__poster=name)
        allowed = Video.objects.filter(known).exists()
    elif derived:
        allowed = any(_granted_original(user, each) for each in names)
    else:
        # Everyone else gets what browsers play: an original only where it plays as it is,
        # else its browser copy or segment clip (a recording's hour, never its segment).
        as_is = Video.objects.filter(media=name, media_state=Video.MediaState.AS_IS)
        allowed = as_is.exists() and any(grant(user, name) for grant in _grants)
    if allowed:
        cache.set(key, True, GRANT_SECONDS)
    return allowed


ORIGINALS_ASKED = 20
"""At most this many originals are asked about for one derived file (one, in practice)."""


def _as_is_poster(name: str) -> bool:
    """True when ``name`` lies where the posters of files that play as they are lie."""
    return name.startswith(AS_IS_POSTER_DIR + "/") and name.endswith(".jpg")


def _granted_original(user, name: str) -> bool:
    """True when ``name`` is the derived file (or poster) of a video a grant allows."""
    served = Q(probe__poster=name) if _as_is_poster(name) else Q(browser_media=name)
    originals = (
        Video.objects.filter(served).values_list("media", flat=True).distinct()[:ORIGINALS_ASKED]
    )
    return any(grant(user, original) for original in originals for grant in _grants)
