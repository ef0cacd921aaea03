"""The gold file upload: its form, and the stored copy of the file that the gold import job
reads."""

from __future__ import annotations

from pathlib import Path

from django import forms

from annotation.gold.file import SUFFIXES
from retrieval.datasets.uploads import save_upload, shown_name


def save_gold(upload, folder: Path) -> tuple[Path, str]:
    """Copy an uploaded gold file into ``folder``: (the copy, the uploader's name for it),
    the copy's suffix the reader's (it goes by the suffix)."""
    name = shown_name(upload, "gold file")
    fmt = next((f for s, f in SUFFIXES.items() if name.lower().endswith(s)), "txt")
    return save_upload(upload, folder, f"gold.{fmt}"), name


class GoldFileForm(forms.Form):
    file = forms.FileField(
        help_text="CSV or JSON lines: caption_key, video_key, label, "
        "explanation and, optionally, guideline."
    )
