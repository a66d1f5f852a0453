"""Prefect flows that wire the stages together, the experiment presets, and the CLI.

- ``settings``: Prefect offline and quiet, its home in the state folder (import first)
- ``config``: run configurations (TOML presets in ``presets/`` plus ``--set``)
- ``calls``: how each stage is called from a configuration; the stage-key probe
- ``tasks``: stages as Prefect tasks cached by their stage keys; Prefect artifacts
- ``pipeline``: the end-to-end flow (``dorylus run``)
- ``lockfile``: run lock files (``dorylus reproduce LOCKFILE``)
- ``deployments``, ``server``: the cron deployment (``dorylus serve``) and a local server
- ``experiments``: the paper's experiments (``dorylus reproduce EXPERIMENT``)
- ``progress``: per-stage progress bars on the terminal
- ``cli``, ``commands/``: the ``dorylus`` command line
"""
