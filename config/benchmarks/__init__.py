"""The benchmark commands' code, kept out of the modules that serve users.

Each module backs one `manage.py` command that prints a figure the issues and docs quote:
`board_bench` (board.py), `marketplace_bench` (marketplace.py), `lessons_bench` (lessons.py),
`sandbox_bench` (sandbox.py) and `bench_load` (load.py). `bench_humaneval` reads HumanEval
through the generation loop itself. See docs/operating.md and docs/development.md.
"""
