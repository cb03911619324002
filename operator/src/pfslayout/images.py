"""The default images: the three the repository builds from images/ (docs/images.md) and the kind path
loads into the test cluster; there is no public registry.

One constant each, imported by the operator's settings, the kinds' specs and builders, and the CRD
generator (crds/kinds.py writes them as the schemas' defaults). The chart's values.yaml and the docs
keep their own literals; tests/unit/test_naming.py checks they equal these. No imports, so crds/ can read
this module without the rest of the package.
"""

DEFAULT_OPERATOR_IMAGE = "pfslayout/operator:dev"  # the operator; also the trace collector's `pfslayout summarise` step
DEFAULT_ORANGEFS_IMAGE = "pfslayout/orangefs:dev"  # OrangeFSCluster.spec.image: servers, client toolbox, hint Jobs
DEFAULT_MPI_IMAGE = "pfslayout/mpi:dev"  # CostCalibration.spec.probeImage, LayoutPolicy.spec.shim.image
