"""The dashboard's pages, one module per page (launch, sweep, scenarios, compare, questions,
downloads). Reads go through sweeps.selectors, writes through sweeps.services; errors become
responses as sweeps.views.errors says.

Access: reading is public when settings.SWEEPSITE_PUBLIC_READ is true, else it needs a login;
launching, answering, resuming and exporting always need one (an anonymous POST gets 403, an
anonymous export is sent to the login page). Every parameter goes through a form: bad values give a
400 page, unknown IDs a 404, never a 500.
"""
