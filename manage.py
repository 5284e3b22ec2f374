#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sweepsite.settings")
    from django.core.management import execute_from_command_line

    from sweepsite.config import one_line_errors

    # A setting missing from the environment (SECRET_KEY with DJANGO_PRODUCTION=1): one line, not a traceback.
    with one_line_errors("manage.py"):
        execute_from_command_line(sys.argv)
