"""The admin site's user pages, refusing a username another account has in any letter case
(the database's index would otherwise answer a rename, or an add that lost a race to the
form's own check, with a server error)."""

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm

from config.accounts.names import UsernameTaken, case_twin


def _clean_username(form: forms.ModelForm) -> str:
    """The form's username unless another account has it in any letter case."""
    username = form.cleaned_data.get("username")
    if username:
        twin = case_twin(username, exclude=form.instance.pk)
        if twin is not None:
            raise forms.ValidationError(str(UsernameTaken(username, twin)), code="unique")
    return username


class AddUserForm(AdminUserCreationForm):
    def clean_username(self) -> str:
        return _clean_username(self)


class ChangeUserForm(UserChangeForm):
    def clean_username(self) -> str:
        return _clean_username(self)


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class CaseSafeUserAdmin(UserAdmin):
    """Django's user admin with the forms above."""

    form = ChangeUserForm
    add_form = AddUserForm
