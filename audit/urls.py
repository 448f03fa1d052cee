from django.urls import path

from audit import pages

urlpatterns = [path("audit/", pages.event_list, name="audit_log")]
