"""The accounts app (see :mod:`config.accounts`)."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "config.accounts"
    label = "firepool_accounts"
    verbose_name = "Accounts"
