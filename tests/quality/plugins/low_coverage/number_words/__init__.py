"""number-words: Describes numbers."""
