"""Stage implementations of dorylus-pipeline.

Stages are plain Python (no Prefect): a stage takes parameters and input artifacts and
produces one output artifact through :func:`stages.contract.run_stage`.
"""
