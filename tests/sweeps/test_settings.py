"""The Celery settings the robustness of sweeps relies on, and that the Celery app really uses them."""

from __future__ import annotations

import os

from django.conf import settings

from sweepsite.celery import app


def test_tasks_are_acknowledged_late_and_requeued_when_a_worker_is_lost():
    assert settings.CELERY_TASK_ACKS_LATE is True
    assert settings.CELERY_TASK_REJECT_ON_WORKER_LOST is True


def test_a_worker_takes_one_message_at_a_time():
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1


def test_the_broker_defaults_to_the_filesystem_transport():
    assert settings.CELERY_BROKER_URL == os.environ.get("CELERY_BROKER_URL", "filesystem://")
    if settings.CELERY_BROKER_URL.startswith("filesystem"):
        opts = settings.CELERY_BROKER_TRANSPORT_OPTIONS
        assert opts["data_folder_in"] == opts["data_folder_out"]
        assert opts["polling_interval"] <= 0.1


def test_tests_have_a_broker_folder_and_queue_of_their_own():
    assert str(settings.VAR_DIR) != str(settings.BASE_DIR / "var")
    assert settings.CELERY_TASK_DEFAULT_QUEUE.startswith("sweepsite-test-")


def test_the_celery_app_picked_the_settings_up():
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.broker_url == settings.CELERY_BROKER_URL
    assert app.conf.task_default_queue == settings.CELERY_TASK_DEFAULT_QUEUE
    assert app.conf.task_always_eager is False
    assert app.conf.task_serializer == "json" and app.conf.accept_content == ["json"]
