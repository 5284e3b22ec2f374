from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponse
from django.urls import include, path

from sweepsite import health

urlpatterns = [
    # Browsers ask for it on every page that names no icon (the admin's): no content, not a 404.
    path("favicon.ico", lambda request: HttpResponse(status=204)),
    # Database, broker and live workers: 200 or 503 with the reasons, as JSON (sweepsite/health.py).
    path("healthz", health.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("sweeps.urls")),
]
