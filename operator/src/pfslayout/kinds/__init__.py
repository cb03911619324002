"""The project's custom resource kinds (crds/), and the pure logic of each in a subpackage of its own.

A subpackage per kind holds its typed spec, its decisions (what to apply or refuse, the status and the
Events a change deserves) and the builders of its child objects; no Kubernetes I/O. The reconcilers
in `pfslayout.operator.reconcilers` do the I/O around them. LayoutPolicy is named here so owner references, metrics and
handlers can address it.
"""

from __future__ import annotations

from pfslayout.k8s.resource import CustomResource

GROUP = "pfslayout.io"
VERSION = "v1alpha1"

ORANGEFS_CLUSTER = CustomResource(GROUP, VERSION, "OrangeFSCluster", "orangefsclusters")
COST_CALIBRATION = CustomResource(GROUP, VERSION, "CostCalibration", "costcalibrations")
LAYOUT_POLICY = CustomResource(GROUP, VERSION, "LayoutPolicy", "layoutpolicies")

# The MPI Operator's kind: probe jobs are MPIJobs, and LayoutPolicies inject the shim into them.
MPIJOB = CustomResource("kubeflow.org", "v2beta1", "MPIJob", "mpijobs")

# The `app.kubernetes.io/managed-by` label of every child object, whichever kind owns it.
MANAGED_BY = "pfs-layout-operator"

# The uid of images/mpi's `mpiuser`: probe ranks run as it (sshd needs its passwd entry), and so does the
# shim copier injected into users' MPIJobs, whatever uid their pods run as.
MPI_IMAGE_UID = 10001
