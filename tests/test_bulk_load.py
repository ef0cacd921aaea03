"""The bulk load and bulk update of :mod:`config.backends` (the benchmarks' worlds go in
through them): rows land as the ORM reads them, on SQLite and on PostgreSQL."""

import pytest

from config.backends import backend
from retrieval.models import Dataset, Video


def _columns(*names: str) -> list[str]:
    return [Video._meta.get_field(name).column for name in names]


@pytest.mark.django_db
def test_bulk_load_writes_rows_the_orm_reads():
    dataset = Dataset.objects.create(name="bulk")
    columns = _columns("dataset", "key", "media", "url", "features", "split", "metadata")
    columns += _columns("media_state", "browser_media")
    state = Video._meta.get_field("media_state").default
    rows = (
        (dataset.pk, f"v{i}", "", f"https://example.org/{i}.mp4", "", "test", "{}", state, "")
        for i in range(3)
    )
    backend().bulk_load(Video._meta.db_table, columns, rows)
    videos = list(Video.objects.filter(dataset=dataset).order_by("key"))
    assert [v.key for v in videos] == ["v0", "v1", "v2"]
    assert videos[2].url == "https://example.org/2.mp4"
    assert videos[0].metadata == {} and videos[0].split == "test"


@pytest.mark.django_db
def test_bulk_update_sets_columns_by_key():
    dataset = Dataset.objects.create(name="bulk")
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"v{i}", split="test") for i in range(3)]
    )
    for _ in range(2):  # twice in one transaction: nothing of the first is left in the way
        backend().bulk_update(
            Video._meta.db_table,
            Video._meta.pk.column,
            _columns("split", "url"),
            [("train", f"u{v.pk}", v.pk) for v in videos[:2]],
        )
    got = dict(Video.objects.filter(dataset=dataset).values_list("key", "split"))
    assert got == {"v0": "train", "v1": "train", "v2": "test"}
    assert Video.objects.get(pk=videos[1].pk).url == f"u{videos[1].pk}"
