"""Feature extraction spread over processes gives what one process gives, in order."""

import numpy as np
import pytest
from django.conf import settings

from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.encoders.features import extract_videos


@pytest.mark.slow
@pytest.mark.django_db
def test_two_workers_give_the_vectors_of_one_in_order_and_name_an_unreadable_file(tmp_path):
    world = create_demo_dataset(name="w", n_videos=3, seed=2, workers=1)
    paths = [str(settings.MEDIA_ROOT / v.media.name) for v in world.videos.order_by("key")]
    broken = tmp_path / "broken.webm"
    broken.write_bytes(b"not a video")
    paths.insert(1, str(broken))

    alone = list(extract_videos(paths, workers=1))
    spread = list(extract_videos(paths, workers=2))

    assert [problem is None for _, _, problem in alone] == [True, False, True, True]
    assert [problem is None for _, _, problem in spread] == [True, False, True, True]
    for (a, _, _), (b, _, _) in zip(alone, spread, strict=True):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
