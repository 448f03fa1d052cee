"""Forms of the account pages."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from jobs.models import Membership


class SignupForm(UserCreationForm):
    """Django's sign-up with an optional email address: invitations sent to it wait for the new account."""

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")
        help_texts = {"email": "Optional. An invitation to a team sent to this address waits for you."}


class AddMemberForm(forms.Form):
    user = forms.CharField(
        label="Username or email", max_length=254, help_text="They join once they accept the invitation."
    )
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class NewTokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What it is for, e.g. 'nightly CI'.")
    days = forms.IntegerField(
        label="Expires after (days)", required=False, min_value=1, max_value=3650,
        help_text="Empty: never (revoke it when you no longer need it).",
    )  # fmt: skip
