"""The dataset import job kind: an uploaded captions file, all or nothing."""

from django import forms

from config.errors import UserError
from jobs.fields import YesNoField
from jobs.registry import ADMIN, JobKind, register
from retrieval import job_results
from retrieval.datasets.uploads import DatasetUpload, UploadError, input_file, run_dataset_import
from retrieval.formats import CAPTION_FORMATS


class ImportDatasetForm(forms.Form):
    """An uploaded captions file to import; the Upload a dataset page fills it in."""

    name = forms.CharField(max_length=100, help_text="Dataset name (created if new).")
    format = forms.ChoiceField(choices=[(name, name) for name in CAPTION_FORMATS])
    captions = forms.CharField(
        max_length=1000, help_text="The uploaded file; filled in by the Upload a dataset page."
    )
    file_name = forms.CharField(max_length=200, required=False)
    videos = forms.CharField(max_length=1000, required=False)
    video_url = forms.CharField(max_length=1000, required=False)
    split = forms.CharField(max_length=32, required=False)
    skip_broken = YesNoField()

    def clean_captions(self) -> str:
        try:
            input_file(self.cleaned_data["captions"])
        except UploadError as exc:
            raise forms.ValidationError(str(exc)) from None
        return self.cleaned_data["captions"]

    def clean(self) -> dict:
        data = super().clean()
        if "name" in data and "format" in data:
            try:
                DatasetUpload.of(data).check()
            except UserError as exc:
                raise forms.ValidationError(str(exc)) from None
        return data


register(
    JobKind(
        "import_dataset",
        "Import an uploaded captions file (from the Upload a dataset page)",
        run_dataset_import,
        ImportDatasetForm,
        permission=ADMIN,
        atomic=True,
        describe=lambda a: (
            f"import {a.get('file_name') or 'captions'} ({a['format']}) into {a['name']}"
        ),
        result_template="retrieval/job_results/import_dataset.html",
        result_context=job_results.import_dataset,
    )
)
