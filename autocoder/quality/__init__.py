"""The quality pipeline: every candidate checked beyond its tests (docs/engine.md, "The quality
pipeline")."""
