"""Alerts: the conditions worth a person's attention, judged where things happen (evaluate.py), moved through
open, acknowledged and resolved (lifecycle.py), listed and triaged in the pages (pages.py) and the API
(api.py)."""
