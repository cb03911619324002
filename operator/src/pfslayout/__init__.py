"""pfslayout: cost-model-driven data layouts for OrangeFS.

The package keeps pure logic (cost model, planner, calibration, trace readers, config rendering, and
each custom resource kind's decisions and objects in ``pfslayout.kinds``) apart from Kubernetes I/O
(``pfslayout.k8s.api``/``custom``, and the reconcilers and Kopf handlers in ``pfslayout.operator``), so
every decision can be tested and explained without a cluster.
"""

__version__ = "0.1.0"
