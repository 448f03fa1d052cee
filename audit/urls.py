from django.urls import path

from audit import views

urlpatterns = [path("audit/", views.event_list, name="audit_log")]
