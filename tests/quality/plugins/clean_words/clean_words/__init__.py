"""clean-words: Counts words in a text."""
