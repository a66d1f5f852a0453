"""The Markdown report of an evaluation, embedding its figures."""

from __future__ import annotations

from stages.evaluate.cost import __doc__ as COST_METHOD


def _f(value, digits: int = 4, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}{unit}" if abs(value) < 1e-3 and value != 0 else f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def _money(value) -> str:
    return "n/a" if value is None else f"${value:.6f}" if value < 0.01 else f"${value:.4f}"


def render(ev: dict, figures: dict[str, str]) -> str:
    run, acc, tm, cost = ev["run"], ev["accuracy"], ev["time"], ev["cost"]
    target = tm["target"]
    lines = [
        f"# Evaluation of train run `{ev['train']['key']}`",
        "",
        f"Model {run.get('model')} {run.get('layers')}, backend `{run.get('backend')}`, staleness `{run.get('staleness')}`, "
        f"{run.get('num_parts')} graph server(s), {run.get('epochs_run')} epochs (stopped by {run.get('stopped_because')}).",
        "",
        "| figure | value |",
        "|---|---|",
        f"| test accuracy at best validation epoch ({acc['best_val_epoch']}) | {_f(acc['test_at_best_val'])} |",
        f"| final test accuracy | {_f(acc['final_test'])} |",
        f"| macro-F1 (test, best validation epoch) | {_f(acc['macro_f1_at_best_val'])} |",
        f"| training time | {_f(tm['train_time'], 2, ' s')} |",
        f"| time per epoch (mean / median) | {_f(tm['per_epoch']['mean'], 3, ' s')} / {_f(tm['per_epoch']['median'], 3, ' s')} |",
        f"| target | {_f(target['value'])} on {target['metric']} ({target['source']}) |",
        f"| time to target | {_f(target['time'], 2, ' s') if target['reached'] else 'not reached'} |",
        f"| epochs to target | {target['epochs'] if target['reached'] else 'not reached'} |",
        f"| estimated cost (equivalent AWS deployment) | {_money(cost['total'])} |",
        f"| value = 1 / (time x cost) | {_f(ev['value'])} per second-dollar |",
        "",
    ]
    if not acc["consistent_with_train"]:
        lines += [
            "> **Warning:** the accuracy recomputed from `predictions.npz` differs from the train summary "
            f"({_f(acc['train_summary']['test_acc_at_best_val'])}); the predictions file is what this report uses.",
            "",
        ]
    lines += ["## Accuracy", "", f"![accuracy against epochs]({figures['accuracy_epochs']})", "",
              f"![accuracy against wall time]({figures['accuracy_time']})", "",
              "Per-class accuracy (recall) on the test split at the best validation epoch:", "",
              "| class | support | accuracy |", "|---|---|---|"]
    for cls, row in sorted(acc["per_class"].items(), key=lambda kv: int(kv[0])):
        lines.append(f"| {cls} | {row['support']} | {_f(row['accuracy'])} |")
    lines += ["", "## Time", "", f"![time by task type]({figures['time_breakdown']})", "",
              "| task | seconds | share | count |", "|---|---|---|---|"]
    for task, row in tm["breakdown"].items():
        lines.append(f"| {task} | {_f(row['seconds'], 3)} | {100 * row['share']:.1f}% | {row['count']} |")
    lines += [
        "",
        "Task seconds are summed over all tasks of all epochs, so with pipelining they add up to more than the wall time.",
        "",
        "## Cost and value (an estimate)",
        "",
        f"Priced as: {run.get('num_parts')} x `{cost['graph_instance']}` graph server(s), `{cost['parameter_instance']}` "
        f"parameter server(s){', tensor tasks on AWS Lambda at ' + _f(cost['lambda_memory_mb'], 0) + ' MB' if cost['lambda'] else ', tensor work on the graph servers (no Lambda)'}; "
        f"on-demand prices of {cost['region']} as of {cost['prices_as_of']} (`infra/pricing.toml`).",
        "",
        "| item | quantity | cost |",
        "|---|---|---|",
        f"| graph servers | {_f(cost['graph_server_hours'], 5)} instance-hours | {_money(cost['items']['graph_servers'])} |",
        f"| parameter servers | {_f(cost['parameter_server_hours'], 5)} instance-hours | {_money(cost['items']['parameter_servers'])} |",
        f"| Lambda compute | {_f(cost['lambda_gb_seconds'], 3)} GB-s | {_money(cost['items']['lambda_compute'])} |",
        f"| Lambda requests | {cost['lambda_requests']} | {_money(cost['items']['lambda_requests'])} |",
        f"| **total** | | **{_money(cost['total'])}** |",
        "",
        "How the estimate is made: " + " ".join(COST_METHOD.split("\n\n", 1)[1].split()),
        "",
    ]
    return "\n".join(lines)
