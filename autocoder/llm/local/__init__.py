"""A local model that needs no server and no key: a recommended GGUF file, downloaded once.

The admin picks a model from a small catalogue (`catalogue`); a worker downloads it into
MODELS_DIR with resume and checksum checks (`download`), installs the llama.cpp runtime when it
is missing (`runtime`), and the in-process llama.cpp provider runs it. `manage.py model_pull`
does the same from the shell. See docs/llm.md, "Local model".
"""
