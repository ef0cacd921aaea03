"""Where the shared data the tests read in place lives (never copied into the tree).

``../shared/data`` beside the tree; for a clone made elsewhere (``git clone . /tmp/x``, as
the guide's fresh-clone check does), beside the tree it was cloned from, found through the
clone's ``origin``; ``FIREPOOL_CROWD_RTE`` names the crowd's folder outright.
"""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _origin() -> Path | None:
    """The local tree this one was cloned from, if it was cloned from a folder."""
    try:
        found = subprocess.run(
            ["git", "-C", str(ROOT), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(found) if found else None
    return path if path is not None and path.is_absolute() and path.is_dir() else None


def crowd_rte() -> Path:
    """The real RTE crowd's folder: the first of the places above that holds it (the first
    place when none does, for the skip message to name)."""
    named = os.environ.get("FIREPOOL_CROWD_RTE")
    if named:
        return Path(named)
    trees = [ROOT] + [tree for tree in [_origin()] if tree is not None]
    places = [tree.parent / "shared" / "data" / "crowd-rte" for tree in trees]
    return next((place for place in places if place.is_dir()), places[0])
