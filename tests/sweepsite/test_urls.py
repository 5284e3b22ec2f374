"""The project's own routes."""

from __future__ import annotations


def test_the_browsers_favicon_request_is_no_404(client):
    assert client.get("/favicon.ico").status_code == 204
