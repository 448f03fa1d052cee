from __future__ import annotations

from django.urls import path

from jobs import views

urlpatterns = [
    path("", views.home, name="home"),
    path("signup/", views.signup, name="signup"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("disk-types/", views.disk_types, name="disk_types"),
    path("healthz", views.healthz, name="healthz"),
]
