"""adder: Adds numbers."""
