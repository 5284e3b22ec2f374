"""The Celery app, as Celery's Django recipe makes it: configuration from Django settings (CELERY_*
names), tasks from the installed apps (sweeps/tasks.py).

The work queue itself (leases, publishing, the watchdog, the worker's signal handlers) is the app's:
sweeps/workqueue/, connected when Django sets the app up (sweeps/apps.py), in every worker too, as
Celery's Django fixup sets Django up before a worker starts. A setting missing from the environment
(production's SECRET_KEY) is one line (sweepsite.config) when Celery first reads its configuration.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from django.conf import settings

from sweepsite.config import one_line_errors

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sweepsite.settings")

app = Celery("sweepsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def load_settings_or_say_what_is_missing(sender: Any = None, **kwargs: Any) -> None:
    with one_line_errors("celery"):
        settings.INSTALLED_APPS  # noqa: B018 - loads the settings module
