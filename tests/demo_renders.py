"""Each demo scene rendered once a test session: later demo datasets copy the first file.

A scene's WebM depends only on its dict (``write_webm`` writes bit-exact bytes;
``tests/retrieval/datasets/test_demo_world.py`` renders for real and checks it), and about
a hundred fixtures build a small demo world, each rendering its clips again: a second a
dataset on a quiet machine, two beside the other database's run. The store is a session
folder named by ``FIREPOOL_TEST_RENDERS``, so spawned render workers share it too.
"""

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path

from retrieval.datasets.demo import render

STORE = "FIREPOOL_TEST_RENDERS"


def render_scene_file(job: tuple[dict, str]) -> str:
    """:func:`render.render_scene_file`, from the session's store when it has the scene."""
    scene, path = job
    store = os.environ.get(STORE)
    if not store:
        return render.render_scene_file(job)
    key = hashlib.sha256(json.dumps(scene, sort_keys=True).encode()).hexdigest()
    kept = Path(store) / f"{key}.webm"
    if not kept.exists():
        part = kept.with_suffix(f".{os.getpid()}-{threading.get_ident()}.part")
        render.render_scene_file((scene, str(part)))
        os.replace(part, kept)
    shutil.copyfile(kept, path)
    return path
