"""reverser: Reverses text."""
