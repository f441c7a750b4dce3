"""case-tools: Changes the case of text."""
