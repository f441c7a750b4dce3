"""Reference docs for the model: the plugin runtime's APIs, retrieved into prompts
(docs/engine.md, "Reference docs")."""
