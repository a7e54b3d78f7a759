from django.urls import path

from inference import views

app_name = "inference"

urlpatterns = [
    path("", views.demo, name="demo"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/waits/", views.run_waits, name="run_waits"),
]
