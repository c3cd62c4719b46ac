"""The bundled examples (a regular package, so that ``examples.*`` gate targets resolve to these files even
when a third-party wheel, such as opacus, installs a top-level ``examples`` package into site-packages)."""
