"""Prefect flows that wire the stages together, the experiment presets, and the CLI."""
