from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SweepsConfig(AppConfig):
    name = "sweeps"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sweeps import roles

        # The role groups (sweeps.roles), after auth has made this app's permissions.
        post_migrate.connect(roles.sync_groups, sender=self, dispatch_uid="sweeps.roles.sync_groups")
