"""Running the mapping of an evaluation on a Ray cluster, with results identical to one process.

:class:`RayLocator` is a :class:`~spanchor_core.locate.Locator`: pass it wherever a locator is
accepted (``score_run(..., locator=)``, ``run_evaluation(..., locator=)``,
``evaluate(..., locator=)``) and the batches are mapped on Ray actors. See :mod:`.ray_engine`.
"""

from __future__ import annotations

from spanchor_core.distributed.ray_engine import (
    RayLocator,
    import_ray,
    partition_bounds,
    ray_engine,
)

__all__ = ["RayLocator", "import_ray", "partition_bounds", "ray_engine"]
