"""The variants' contracts (docs/variants.md): block-aligned chunks (`aligned`), a budget that
changes while running (`budget_change`: budget-change, rotation), priorities with aging (`priority`)
and static batching (`static`). `stallfree.spec.registry` holds each by name."""
