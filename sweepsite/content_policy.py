"""The Content-Security-Policy every page is served with (django-csp 4's CONTENT_SECURITY_POLICY).

Rules:
- Everything from this site only ('self'): scripts, styles, images (and data: images, Plotly's
  toolbar icons), fonts, fetches, form targets; no plugins, no framing, no <base> elsewhere.
- No inline script at all, no eval: the pages' scripts are static files (sweeps/static/sweeps/*.js)
  that read their data from <script type="application/json"> tags, which are data, not scripts.
- No inline style with content written by the server: the site's styles are one static stylesheet.
  What Plotly needs, and nothing more, is let through by hash:
  - the empty text: Plotly makes one empty <style> element and fills it through CSSOM (insertRule,
    which the policy does not govern), and clears a few style attributes (style="");
  - the style sheets plotly.min.js itself inserts as text when it loads (MapLibre's, for map
    traces this site does not draw), read from the file served, so that they match its version.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

# A style element made and filled with a literal text, as the minified bundle writes it.
_INSERTED_STYLE = re.compile(r'createElement\("style"\);[^;]{0,300}?\.textContent=\'([^\'\\]*)\'')


def source_hash(text: str) -> str:
    """A CSP source allowing an inline text: 'sha256-<base64 of its SHA-256>'."""
    return f"'sha256-{base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()}'"


EMPTY_TEXT = source_hash("")


def inserted_styles(plotly_js: Path) -> list[str]:
    """The style sheets plotly.min.js inserts as literal text."""
    return _INSERTED_STYLE.findall(plotly_js.read_text(encoding="utf-8"))


def policy(plotly_js: Path) -> dict[str, Any]:
    """CONTENT_SECURITY_POLICY for django-csp 4 (see the rules)."""
    self_ = "'self'"
    return {
        "DIRECTIVES": {
            "default-src": [self_],
            "script-src": [self_],
            "style-src": [self_],
            "style-src-elem": [self_, EMPTY_TEXT, *(source_hash(s) for s in inserted_styles(plotly_js))],
            "style-src-attr": ["'unsafe-hashes'", EMPTY_TEXT],
            "img-src": [self_, "data:"],
            "font-src": [self_],
            "connect-src": [self_],
            "object-src": ["'none'"],
            "base-uri": [self_],
            "form-action": [self_],
            "frame-ancestors": ["'none'"],
        }
    }
