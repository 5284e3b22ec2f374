from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_delete, post_migrate


class SweepsConfig(AppConfig):
    name = "sweeps"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: Django imports this module before the models are loaded.
        from sweeps import roles, targets
        from sweeps.models import Export
        from sweeps.services import export_files
        from sweeps.workqueue import signals  # noqa: F401 - connects the workers' Celery signal handlers

        # A malformed SWEEPSITE_TARGETS stops migrate and runserver (make run), not a launch later.
        checks.register(targets.check_registry)
        # The role groups (sweeps.roles), after auth has made this app's permissions.
        post_migrate.connect(roles.sync_groups, sender=self, dispatch_uid="sweeps.roles.sync_groups")
        # An export's file goes with its row (its sweep deleted, or a newer export of the same rows).
        post_delete.connect(export_files.file_removed, sender=Export, dispatch_uid="sweeps.export_files.file_removed")
