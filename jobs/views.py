from __future__ import annotations

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from jobs import limits, teams
from jobs.models import Disk, Host


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True


class LogoutView(auth_views.LogoutView):
    pass


def signup(request: HttpRequest) -> HttpResponse:
    if not settings.BENCHWEB_ALLOW_SIGNUP:
        raise Http404("Sign-up is turned off on this server; ask an owner to invite you.")
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        teams.place_new_user(user)
        auth.login(request, user)
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form})


@login_required
def home(request: HttpRequest) -> HttpResponse:
    team = teams.current_team(request)
    hosts = Host.objects.filter(team=team).prefetch_related("disks") if team else Host.objects.none()
    disks = Disk.objects.filter(team=team).select_related("host") if team else Disk.objects.none()
    rows = []
    for disk in disks:
        try:
            rows.append((disk, disk.limits(), None))
        except limits.SpecError as exc:
            rows.append((disk, None, str(exc)))
    return render(request, "jobs/home.html", {"hosts": hosts, "disk_rows": rows})


@login_required
def disk_types(request: HttpRequest) -> HttpResponse:
    return render(request, "jobs/disk_types.html", {"types": limits.disk_types()})


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
