"""The default images: the three the repository builds from images/ (docs/images.md), under the names the
test cluster's registry serves them by (e2e/harness/cluster/registry.sh).

One constant each: the operator's settings fall back to them (PFSLAYOUT_OPERATOR_IMAGE,
PFSLAYOUT_ORANGEFS_IMAGE, PFSLAYOUT_MPI_IMAGE, which the chart sets from its values `image.*`,
`images.orangefs`, `images.mpi`), and the kinds' parsers give them to a spec that names no image when
called without the operator's. The CRDs carry no image default (crds/kinds.py says why). The chart's
values.yaml and the docs keep their own literals; tests/unit/test_naming.py checks they equal these. No
imports, so crds/ can read this module without the rest of the package.
"""

DEFAULT_OPERATOR_IMAGE = "pfslayout/operator:dev"  # the operator; also the trace collector's `pfslayout summarise` step
DEFAULT_ORANGEFS_IMAGE = "pfslayout/orangefs:dev"  # OrangeFSCluster.spec.image: servers, client toolbox, hint Jobs
DEFAULT_MPI_IMAGE = "pfslayout/mpi:dev"  # CostCalibration.spec.probeImage, LayoutPolicy.spec.shim.image
