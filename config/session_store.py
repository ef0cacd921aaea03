"""Django's database sessions, with the one read every request makes written by hand.

``SessionStore.load`` of ``django.contrib.sessions.backends.db`` reads the row through the
ORM; composing that query cost several times running it on every request (measured
by ``bench/request_profile.py``). This store reads the same table, under the same rule
(a session past its expiry date does not exist), with :func:`load_statement` written once; everything
else (saving, cycling keys, deleting, clearing expired rows) is Django's.
"""

import functools

from django.contrib.sessions.backends import db
from django.db import connection
from django.utils import timezone

from config import raw_sql


@functools.cache
def load_statement(vendor: str) -> str:
    """The data of session ``%(key)s`` if it has not expired by ``%(now)s`` (on ``vendor``'s
    backend)."""
    from django.contrib.sessions.models import Session

    return (
        f"SELECT s.{raw_sql.quote('session_data')} AS data FROM {raw_sql.table(Session)} s "
        f"WHERE s.{raw_sql.quote('session_key')} = %(key)s "
        f"AND s.{raw_sql.quote('expire_date')} > %(now)s"
    )


class SessionStore(db.SessionStore):
    """Database sessions whose load is one hand-written statement (see the module)."""

    def _get_session_from_db(self):
        if self.session_key is None:
            return None
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        found = raw_sql.rows(
            load_statement(connection.vendor), {"key": self.session_key, "now": now}
        )
        if not found:
            self._session_key = None
            return None
        return self.model(session_key=self.session_key, session_data=found[0].data)
