"""The cost models of the seeds: 003 Table 2 (``table``), 001's storage-only model (``storage_only``),
002's placement cost and balancing (``placement``) and 004's shuffle cost with NIO/SIO/HIO (``shuffle``).
"""

from pfslayout.costmodel.params import (
    MIB,
    SEED_ETHERNET,
    SEED_INFINIBAND,
    SEEDS,
    CostParams,
    ServerParams,
    load_params,
    params_from_mapping,
    resolve_params,
)
from pfslayout.costmodel.table import (
    LAYOUTS,
    VARIANTS,
    Coefficients,
    CostBreakdown,
    coefficients,
    cost,
    table_row,
)

__all__ = [
    "LAYOUTS",
    "MIB",
    "SEEDS",
    "SEED_ETHERNET",
    "SEED_INFINIBAND",
    "VARIANTS",
    "Coefficients",
    "CostBreakdown",
    "CostParams",
    "ServerParams",
    "coefficients",
    "cost",
    "load_params",
    "params_from_mapping",
    "resolve_params",
    "table_row",
]
