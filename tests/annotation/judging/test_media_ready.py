"""A pair whose video's browser copy or segment clip is not made yet is not served: the
campaign can be pooled before the copies exist, and its pairs come as they are made."""

import pytest

from annotation.judging import queue
from annotation.models import Campaign
from retrieval.models import Video
from tests.factories import make_campaign


@pytest.fixture
def campaign(db) -> Campaign:
    made = make_campaign(n_queries=2, depth=3)
    made.status = Campaign.Status.ACTIVE
    made.save(update_fields=["status"])
    return made


def test_pairs_wait_for_their_browser_files(campaign, people):
    annotator = people["annotator"]
    videos = Video.objects.filter(dataset=campaign.dataset)
    videos.update(media_state=Video.MediaState.PENDING)
    assert queue.assign(campaign, annotator).current is None
    assert queue.free_now([campaign], annotator) == set()
    assert queue.has_work_for(campaign, annotator)  # they will come once the files are made
    ready = campaign.pairs.order_by("position").first().video
    Video.objects.filter(pk=ready.pk).update(
        media_state=Video.MediaState.READY, browser_media="derived/aa/x.mp4"
    )
    assert queue.free_now([campaign], annotator) == {campaign.pk}
    assignment = queue.assign(campaign, annotator)
    served = assignment.current
    assert served is not None and served.pair.video_id == ready.pk
    assert served.pair.video.source_url.endswith("derived/aa/x.mp4")
    upcoming = assignment.upcoming
    assert upcoming is None or upcoming.pair.video_id == ready.pk


def test_the_campaign_page_says_how_many_pairs_wait_for_their_files(campaign, people, client):
    client.force_login(people["admin"])
    assert b'id="waiting-for-media"' not in client.get(f"/campaigns/{campaign.pk}/").content
    first = campaign.pairs.order_by("position").first()
    Video.objects.filter(pk=first.video_id).update(media_state=Video.MediaState.PENDING)
    waiting = campaign.pairs.filter(video_id=first.video_id).count()
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert 'id="waiting-for-media"' in page
    assert f">{waiting} pair" in page and "served once the media job has made" in page
