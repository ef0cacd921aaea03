"""Accounts: one per username in any letter case, said as a clear error at every door that
makes or renames one (this app's ``createsuperuser``, the admin site's user forms in
:mod:`config.admin`, the services that make users) before the database's index
(``config`` migration 0003) has to refuse it, and again when it does (a race).

An app of its own only so that its ``createsuperuser`` is found before Django's: it is
listed ahead of ``django.contrib.auth``, whose command it extends."""
