"""Cost-model options that `cost`, `plan` and `cost-map` share, declared once so their flags and help agree."""

from __future__ import annotations

from typing import Annotated

import typer

ParamsOption = Annotated[str | None, typer.Option(
    "--params", help="parameters file (JSON/YAML), or 'ethernet'/'infiniband' for the seeds")]
VariantOption = Annotated[str, typer.Option("--variant", help="printed or corrected")]
