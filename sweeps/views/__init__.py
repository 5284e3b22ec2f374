"""The dashboard's pages, one module per page (launch, sweep, scenarios, compare, questions,
downloads). Reads go through sweeps.selectors, writes through sweeps.services; errors become
responses as sweeps.views.errors says.

Access (sweeps.roles says who may do what; _common has the decorators): reading needs the viewer
role or more, or nothing when settings.SWEEPSITE_PUBLIC_READ is on, except the pages and files with
call arguments or keys (questions, timelines, witnesses, exports), which always need a login; every
write needs a role that allows it, checked by `allow` before its service is called (an anonymous
POST gets 403 first, an anonymous GET of a page that needs a login goes to the login page). Every
parameter goes through a form: bad values give a 400 page, unknown IDs a 404, never a 500.
"""
