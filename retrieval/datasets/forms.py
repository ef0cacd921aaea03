"""The dataset pages' forms: captions to upload (any importer format, with the videos' folder
or URL template) and a model to add from one of three sources."""

from django import forms

from retrieval.datasets.names import NAME_MAX_LENGTH
from retrieval.encoders.base import EPOCHS
from retrieval.encoders.registry import ENCODERS
from retrieval.formats import CAPTION_FORMATS
from retrieval.formats.records import SPLIT_MAX_LENGTH, URL_MAX_LENGTH, check_chars
from retrieval.forms import NameValidator
from retrieval.models import LabelSet

FORMAT_HELP = {
    "jsonl": "JSON Lines: video_id, caption_id, caption, split (optional video_path, video_url, "
    "start, end, duration, is_query)",
    "csv": "CSV with the same columns as jsonl",
    "msrvtt-json": "MSR-VTT's MSRVTT_data.json (videos and sentences)",
    "msrvtt-csv": "MSR-VTT's 1k-A test CSV (key, vid_key, video_id, sentence)",
    "epic-csv": "EPIC-KITCHENS-100 retrieval CSV (narration_id, narration, verb_class, "
    "all_noun_classes)",
}


class StorableField(forms.CharField):
    """Text (blanks stripped) that a database column can store, else a form error; checked
    after the field's own checks (Django's NUL check first)."""

    def clean(self, value: object) -> str:
        text = super().clean(value)
        try:
            return check_chars(text)
        except ValueError as exc:
            raise forms.ValidationError(f"this {exc}") from None


class DatasetUploadForm(forms.Form):
    """Captions to import, in any importer format, with their videos' folder or URL template."""

    name = forms.CharField(
        max_length=NAME_MAX_LENGTH,
        validators=[NameValidator("dataset")],
        help_text="A new dataset is created; an existing one gets the captions added.",
    )
    format = forms.ChoiceField(
        choices=[(name, f"{name}: {FORMAT_HELP.get(name, name)}") for name in CAPTION_FORMATS]
    )
    captions = forms.FileField(allow_empty_file=True, help_text="The captions file.")
    videos = StorableField(
        max_length=1000,
        required=False,
        label="Videos folder on the server",
        help_text="Every video must resolve to a file in it (or two levels below).",
    )
    video_url = StorableField(
        max_length=URL_MAX_LENGTH,
        required=False,
        label="Video URL template",
        help_text="With {video_id}, {key}, {start}, {end}, e.g. https://host/videos/{video_id}.mp4",
    )
    split = StorableField(
        max_length=SPLIT_MAX_LENGTH,
        required=False,
        help_text="For records that carry none (a record's own split wins).",
    )
    skip_broken = forms.BooleanField(
        required=False,
        label="Skip broken video files",
        help_text="Import the rest when some files do not decode (their captions are left "
        "out and listed); otherwise a broken file stops the import.",
    )

    def clean(self) -> dict:
        data = super().clean()
        if data.get("videos") and data.get("video_url"):
            raise forms.ValidationError("Give either a videos folder or a URL template, not both.")
        return data


SOURCES = [
    ("run", "a TREC run file"),
    ("embeddings", "uploaded embeddings (four files)"),
    ("encoder", "a built-in encoder (trained and run here)"),
]
EMBEDDING_FIELDS = {
    "captions_npy": "captions.npy",
    "videos_npy": "videos.npy",
    "caption_ids": "caption_ids.txt",
    "video_ids": "video_ids.txt",
}
"""Form field of each embeddings file, by the name the registration reads."""


class ModelAddForm(forms.Form):
    """A model for a dataset from one of three sources; each source needs its own fields."""

    name = forms.CharField(
        max_length=NAME_MAX_LENGTH,
        validators=[NameValidator("model")],
        help_text="Unique on the dataset; a run file's run takes this name too.",
    )
    source = forms.ChoiceField(choices=SOURCES, widget=forms.RadioSelect, initial="run")
    run = forms.FileField(
        required=False,
        allow_empty_file=True,
        label="Run file",
        help_text="qid Q0 docno rank score run_id (qid = caption key, docno = video key).",
    )
    labels = StorableField(
        max_length=LabelSet._meta.get_field("name").max_length,
        required=False,
        label="Label set to score the run with",
        help_text="Default: the dataset's default label set.",
    )
    captions_npy = forms.FileField(required=False, allow_empty_file=True, label="captions.npy")
    videos_npy = forms.FileField(required=False, allow_empty_file=True, label="videos.npy")
    caption_ids = forms.FileField(required=False, allow_empty_file=True, label="caption_ids.txt")
    video_ids = forms.FileField(required=False, allow_empty_file=True, label="video_ids.txt")
    encoder = forms.ChoiceField(
        choices=[("", "—")] + [(name, name) for name in ENCODERS], required=False
    )
    k = forms.IntegerField(
        min_value=1,
        max_value=1000,
        initial=20,
        required=False,
        label="Depth k",
        help_text="Videos kept per query caption when searching (embeddings and encoders).",
    )
    epochs = forms.IntegerField(
        min_value=EPOCHS[0],
        max_value=EPOCHS[1],
        required=False,
        help_text="Training epochs of a trainable encoder (default: the encoder's own).",
    )

    def __init__(self, *args, label_sets: list[str] = (), **kwargs):
        super().__init__(*args, **kwargs)
        choices = [("", "the dataset's default label set"), *((n, n) for n in label_sets)]
        self.fields["labels"].widget = forms.Select(choices=choices)
        for name in ("run", "encoder", *EMBEDDING_FIELDS):
            self.fields[name].needed_by_source = True  # required when its source is chosen

    def clean(self) -> dict:
        data = super().clean()
        source = data.get("source")
        if source == "run" and not data.get("run"):
            self.add_error("run", "Choose the run file.")
        elif source == "embeddings":
            for field, file_name in EMBEDDING_FIELDS.items():
                if not data.get(field) and field not in self.errors:
                    self.add_error(field, f"Choose {file_name}.")
        elif source == "encoder" and not data.get("encoder"):
            self.add_error("encoder", "Choose a built-in encoder.")
        data["k"] = data.get("k") or 20
        return data

    def embedding_files(self) -> dict:
        """The four uploaded files by the names registration reads."""
        return {name: self.cleaned_data[field] for field, name in EMBEDDING_FIELDS.items()}
