"""`python manage.py sweep`: the CLI's options and output, run through the services and real workers."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from sweeps.models import Sweep


@pytest.mark.django_db(transaction=True)
def test_table_as_json_equals_the_cli_s():
    cli = subprocess.run([sys.executable, "-m", "agentcore", "table", "--format", "json", "--workers", "2"],
                         capture_output=True, text=True, check=True, cwd=settings.BASE_DIR)
    out, err = io.StringIO(), io.StringIO()
    call_command("sweep", "table", "--format", "json", "--workers", "1", "--timeout", "300", stdout=out, stderr=err)
    assert json.loads(out.getvalue()) == json.loads(cli.stdout)
    sweep = Sweep.objects.get()
    assert sweep.status == Sweep.Status.DONE
    assert f"{sweep.total_chunks}/{sweep.total_chunks}" in err.getvalue()  # the progress bar reached the end


@pytest.mark.django_db
@pytest.mark.parametrize(("argv", "message"), [
    (["table", "--job", "/nonexistent/job.json"], "cannot read"),
    (["sweep", "--design", "loop", "--tracker", "keyed", "--runs", "11"], "runs must be between 1 and 10"),
    (["sweep", "--design", "nope", "--tracker", "keyed"], "invalid choice"),
])
def test_user_errors_are_one_line_and_store_nothing(argv, message):
    with pytest.raises(CommandError, match=message) as e:
        call_command("sweep", *argv)
    assert "\n" not in str(e.value)
    assert Sweep.objects.count() == 0
