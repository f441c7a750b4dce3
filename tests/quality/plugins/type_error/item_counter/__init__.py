"""item-counter: Counts items."""
