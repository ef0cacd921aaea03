"""A password hasher for the tests: PBKDF2-SHA256 at one iteration instead of a million.

Django's docs advise a fast hasher in tests (a million iterations take half a second of a
quiet core, and the suite makes and checks a few thousand passwords). This one keeps the
algorithm's name and format, so a server the tests start with the project's own settings
(gunicorn, ``manage.py``) verifies its hashes too: PBKDF2 reads the count from the hash.
"""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class OneIterationPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1
