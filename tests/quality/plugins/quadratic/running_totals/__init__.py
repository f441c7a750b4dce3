"""running-totals: Running totals of numbers."""
