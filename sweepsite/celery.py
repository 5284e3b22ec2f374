"""The Celery app: configuration comes from Django settings (CELERY_* names), tasks from the apps."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sweepsite.settings")

app = Celery("sweepsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
