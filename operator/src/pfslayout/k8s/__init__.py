"""Kubernetes for any kind: what identifies a custom resource, object metadata and owner references,
status conditions, reading built-in workloads (all pure), and the API I/O (`api`, `custom`).

Nothing here knows a pfslayout kind: the kind travels as data (`resource.CustomResource`), so the
OrangeFSCluster, CostCalibration and LayoutPolicy reconcilers share one implementation.
"""
