"""The exact index saved beside a model follows its embeddings."""

import numpy as np
import pytest

from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.models import RetrievalModel, Video
from retrieval.search import index as faiss_index
from retrieval.search.artifacts import StoredEmbeddings, load_embeddings, resolve, save_embeddings
from retrieval.search.service import build_exact_index, collection_for


@pytest.mark.django_db
def test_embedding_again_rebuilds_the_saved_index():
    """New vectors over the same videos replace the saved index: reusing it (the video ids
    match) would search the old vectors."""
    dataset = create_demo_dataset(name="reindex", n_videos=12, seed=3, workers=1)
    caption_ids = np.array(list(dataset.captions.order_by("pk").values_list("pk", flat=True)))
    video_ids = np.array(
        list(Video.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True))
    )
    model = RetrievalModel.objects.create(dataset=dataset, name="emb", source="embeddings")
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        vectors = StoredEmbeddings(
            caption_ids,
            rng.normal(size=(len(caption_ids), 8)).astype(np.float32),
            video_ids,
            rng.normal(size=(len(video_ids), 8)).astype(np.float32),
        )
        save_embeddings(model, vectors)
        size = build_exact_index(model)
        model.refresh_from_db()
        saved = faiss_index.load_index(resolve(model.index))
        wanted = collection_for(model, load_embeddings(model), "test").video_vectors
        wanted = wanted / np.linalg.norm(wanted, axis=1, keepdims=True)
        assert size == saved.ntotal == len(wanted) > 0
        np.testing.assert_allclose(saved.reconstruct_n(0, saved.ntotal), wanted, atol=1e-6)
