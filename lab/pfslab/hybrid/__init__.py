"""``lab hybrid`` (issue 13): a mixed workload on every static layout and through the shim's replica
routing, on the lab's real OrangeFS servers.

Modules, in the order a run uses them: ``plan`` (the workload's phases, the static layouts as the planner
realises them, the model's picks and so the replicas), ``paths`` (where each variant's and replica's
files are under the run's root), ``shim`` (the shim's config for every variant, its routing counters
summed), ``measure`` (the rounds of IOR launches on OrangeFS, and what OrangeFS made of the files),
``scoring`` (oracle, gain, distance, sync cost, break-even; pure), ``report`` (the JSON report and its
docs/results.md section). ``pfslab.cli``'s ``hybrid`` command strings them together.
"""
