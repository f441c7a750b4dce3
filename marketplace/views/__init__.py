"""Views of the marketplace: the package index (index.py) and the portal pages (catalogue.py)."""
