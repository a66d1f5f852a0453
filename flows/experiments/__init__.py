"""The paper's experiments as flows: one flow definition per experiment, presets as TOML.

Each experiment runs a set of variants of one base run configuration (different staleness,
backends, numbers of graph servers, or a baseline trainer), evaluates each, and compares
them in an ``experiment`` artifact (see ``stages.evaluate.experiment``): a table (CSV and
Markdown), figures (PNG) and a report. Presets live in ``flows/presets/experiment-<name>.toml``
with a ``[small]`` table (minutes on a laptop) and a ``[paper]`` table (the paper's
datasets, sizes and cluster shapes, meant for AWS).
"""

EXPERIMENTS = ("asynchrony", "backends", "scaling", "sampling")
BASELINES = ("sage-sampling",)  # variant kinds besides "dorylus"; see flows.experiments.baselines
