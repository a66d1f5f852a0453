"""Partition quality: what a partition costs the graph servers in communication and balance.

- edge-cut fraction: directed edges whose endpoints have different owners, over all edges
  (every cut edge means a ghost row to fetch);
- replication factor: ghosts (remote in-neighbours) per vertex, in total and per part;
- vertex and edge balance: max over mean of local vertices and of local in-edges (the
  slowest graph server sets the pace of a synchronous epoch).
"""

from __future__ import annotations


def quality(parts: list[dict], num_nodes: int, num_edges: int) -> dict:
    p = len(parts)
    local = [s["num_local"] for s in parts]
    edges = [s["num_in_edges"] for s in parts]
    cut = sum(s["num_cut_in_edges"] for s in parts)
    return {
        "edge_cut_fraction": cut / num_edges if num_edges else 0.0,
        "replication_factor": sum(s["num_ghosts"] for s in parts) / num_nodes,
        "replication_per_part": [s["num_ghosts"] / s["num_local"] if s["num_local"] else 0.0 for s in parts],
        "vertex_balance": max(local) / (sum(local) / p),
        "edge_balance": max(edges) / (sum(edges) / p) if sum(edges) else 1.0,
    }
