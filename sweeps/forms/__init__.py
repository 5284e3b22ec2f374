"""The dashboard's forms: launching a sweep or an audit (launch.py), the job files they read (jobfiles.py),
the lists' filters, heatmap options, answers (lists.py), one scenario of the audit (witness.py).

Rules:
- Every value from a URL or a POST goes through one of these, so that bad input is a form error (a
  400 page), never an exception deeper down.
- A condition's field is derived from its declaration (agentcore.conditions): the launch form's
  (fields.py: its label, help, choices or suggested spellings) and the witness form's.
"""
