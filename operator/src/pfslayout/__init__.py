"""pfslayout: cost-model-driven data layouts for OrangeFS.

The package keeps pure logic (cost model, planner, calibration, trace readers, config rendering)
apart from Kubernetes I/O (the Kopf handlers in ``pfslayout.operator``), so every decision can be
tested and explained without a cluster.
"""

__version__ = "0.1.0"
