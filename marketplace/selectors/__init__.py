"""Reads of the marketplace, one module per area: `visibility` (who sees what, used by every
query), `catalogue` (search), `versions`, `reviews`, `gate` (the publish gate as a viewer meets
it), `index` (the package index), `tokens`, `checking` and `trying` (queued work's progress)."""
