"""The admin site's user pages, refusing a username another account has in any letter case
(else the database's index would answer with a server error)."""

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm

from config.accounts.names import UsernameTaken, case_twin


class CaseSafeUsername:
    """A user form's username check: no other account may have it in any letter case."""

    def clean_username(self: forms.ModelForm) -> str:
        username = self.cleaned_data.get("username")
        if username:
            twin = case_twin(username, exclude=self.instance.pk)
            if twin is not None:
                raise forms.ValidationError(str(UsernameTaken(username, twin)), code="unique")
        return username


class AddUserForm(CaseSafeUsername, AdminUserCreationForm):
    pass


class ChangeUserForm(CaseSafeUsername, UserChangeForm):
    pass


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class CaseSafeUserAdmin(UserAdmin):
    """Django's user admin with the forms above."""

    form = ChangeUserForm
    add_form = AddUserForm
