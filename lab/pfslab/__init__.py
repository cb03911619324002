"""The performance lab (issue 13): an emulated OrangeFS cluster on one machine — servers in network
namespaces behind shaped veths on a private bridge — that measures whether the calibrated cost model
picks the layout a user would have found by trying them all. ``lab/lab`` is its command; see
docs/lab.md.

Modules: ``net`` (namespaces, bridge, shaping), ``servers`` (pvfs2-servers from the rendered fs.conf),
``runs`` (pfsprobe launches, one per process count), ``grids`` (calibration and validation grids),
``score`` (decisive cells, correct rate, regret, baselines), ``report`` (JSON, PNG, docs/results.md),
``product`` (the pfslayout CLI as the lab runs it), ``hybrid`` (``lab hybrid``'s mixed workload, a
package: see its docstring), ``lifecycle`` (up and down), ``cli`` (the ``lab`` command).
"""
