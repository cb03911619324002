"""Admission: shim injection into the MPIJobs a LayoutPolicy selects.

* `upkeep.py` — the mutating webhook's TLS, configuration and namespace scope, kept current;
* `review.py` — the webhook's answer to an MPIJob CREATE;
* `policy_cache.py` — the policies the answer is made from, without an API call;
* `suspend.py` — the same injection without a webhook, for jobs created suspended.
"""
