import os

from django.core.wsgi import get_wsgi_application

from sweepsite.config import one_line_errors

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sweepsite.settings")
# A setting missing from the environment: one line, and exit status 4, gunicorn's "App failed to
# load", on which it stops rather than starting the worker again and again.
with one_line_errors("sweepsite", status=4):
    application = get_wsgi_application()
