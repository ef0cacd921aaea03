"""Accounts: one per username in any letter case, a clear error at every door that makes or
renames one. An app of its own only so its ``createsuperuser`` is found before Django's."""
