"""``dorylus infra up|down|status``: the AWS deployment as one CloudFormation stack.

``up`` creates the stack or updates it in place and waits; ``down`` deletes it and waits
(the artifact bucket is retained); ``status`` prints its state and outputs. ``up --build
KEY`` fills the image parameters from a pushed build artifact (``dorylus build --push``).
The template is ``infra/aws/dorylus.yaml``; infra/aws/README.md walks through a deployment.
"""

from __future__ import annotations

import logging
from pathlib import Path

from stages.errors import DorylusError

log = logging.getLogger("dorylus.infra")

DEFAULT_STACK = "dorylus"
TEMPLATE = Path(__file__).resolve().parents[2] / "infra" / "aws" / "dorylus.yaml"
TEMPLATE_BODY_LIMIT = 51_200  # bytes CloudFormation accepts inline
IMAGE_PARAMETERS = {"lambda": "LambdaImageUri", "graph-server": "GraphServerImageUri"}


def add_parser(sub) -> None:
    p = sub.add_parser("infra", help="deploy, update, inspect or tear down the AWS stack", description=__doc__)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = actions.add_parser("up", help="create or update the stack and wait for it")
    up.add_argument("--template", type=Path, default=TEMPLATE, help=f"CloudFormation template (default: {TEMPLATE})")
    up.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="a template parameter, e.g. GraphServerCount=4 (repeatable; unset ones keep their current value)")
    up.add_argument("--build", metavar="REF", help="a pushed build artifact (key or URI): sets the image parameters")
    up.add_argument("--store", metavar="URI", help="artifact store to find --build in (default: .dorylus/store)")
    for action in (up, actions.add_parser("down", help="delete the stack and wait (the artifact bucket is kept)"),
                   actions.add_parser("status", help="the stack's state, outputs and parameters")):
        action.add_argument("--stack-name", default=DEFAULT_STACK, help=f"CloudFormation stack name (default: {DEFAULT_STACK})")
        action.add_argument("--region", help="AWS region (default: from the AWS configuration)")
        action.add_argument("--json", action="store_true", help="print one JSON object")
        action.set_defaults(handler=run)


def run(args) -> dict:
    from botocore.exceptions import BotoCoreError

    try:
        return _run(args)
    except BotoCoreError as exc:  # no credentials, no region, endpoint unreachable
        raise DorylusError(f"AWS: {exc}; configure credentials and a region (`aws configure`, or AWS_* variables, or --region)") from None


def _run(args) -> dict:
    cf = _client(args.region)
    if args.action == "up":
        params = _parameters(args.param)
        if args.build:
            params.update(build_parameters(args.build, args.store))
        return up(cf, args.stack_name, args.template, params)
    if args.action == "down":
        return down(cf, args.stack_name)
    return status(cf, args.stack_name)


def _client(region: str | None):
    import boto3

    return boto3.client("cloudformation", region_name=region)


def _parameters(items: list[str]) -> dict[str, str]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise DorylusError(f"--param {item!r}: write it as KEY=VALUE, e.g. GraphServerCount=4")
        params[key] = value
    return params


def build_parameters(ref: str, store_uri: str | None) -> dict[str, str]:
    """The image parameters from a build artifact whose images were pushed."""
    from stages.build import images
    from stages.contract import resolve_artifact
    from stages.store import ArtifactStore

    spec = images(resolve_artifact(ref, ArtifactStore.open(store_uri), stage="build"))
    params = {}
    for name, key in IMAGE_PARAMETERS.items():
        uri = spec.get("images", {}).get(name, {}).get("image_uri")
        if not uri:
            raise DorylusError(f"build artifact {ref} has no pushed {name} image ({spec.get('status')}); run `dorylus build --push` first")
        params[key] = uri
    return params


# ------------------------------------------------------------------------- actions
def up(cf, stack: str, template: Path, params: dict[str, str]) -> dict:
    body = _template_body(template)
    declared = _declared_parameters(cf, body)
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise DorylusError(f"unknown template parameter(s) {', '.join(unknown)}; the template declares {', '.join(sorted(declared))}")
    current = _describe(cf, stack)
    if current is not None and current["StackStatus"] == "ROLLBACK_COMPLETE":
        raise DorylusError(f"stack {stack} failed to create and was rolled back; run `dorylus infra down --stack-name {stack}` and try again")
    capabilities = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"]
    given = [{"ParameterKey": k, "ParameterValue": v} for k, v in sorted(params.items())]
    try:
        if current is None:
            log.info("creating stack %s", stack)
            cf.create_stack(StackName=stack, TemplateBody=body, Parameters=given, Capabilities=capabilities,
                            Tags=[{"Key": "dorylus:stack", "Value": stack}])
            action, waiter = "created", "stack_create_complete"
        else:
            # parameters not given keep their deployed values (images, sizes); passed as
            # values, since UsePreviousValue of a defaulted parameter trips some emulators
            kept = _previous(current, declared, params)
            log.info("updating stack %s", stack)
            cf.update_stack(StackName=stack, TemplateBody=body, Parameters=given + kept, Capabilities=capabilities)
            action, waiter = "updated", "stack_update_complete"
    except cf.exceptions.ClientError as exc:
        if "No updates are to be performed" in str(exc):
            return _result(cf, stack, "unchanged")
        raise DorylusError(f"CloudFormation refused stack {stack}: {_message(exc)}") from None
    _wait(cf, stack, waiter)
    return _result(cf, stack, action)


def down(cf, stack: str) -> dict:
    current = _describe(cf, stack)
    if current is None:
        return {"stage": "infra", "uri": f"cloudformation:{stack}", "stack": stack, "action": "absent", "status": "DELETE_COMPLETE"}
    outputs = _outputs(current)
    log.info("deleting stack %s", stack)
    try:
        cf.delete_stack(StackName=current["StackId"])
    except cf.exceptions.ClientError as exc:
        raise DorylusError(f"CloudFormation could not delete stack {stack}: {_message(exc)}") from None
    _wait(cf, current["StackId"], "stack_delete_complete")
    result = {"stage": "infra", "uri": f"cloudformation:{stack}", "stack": stack, "action": "deleted", "status": "DELETE_COMPLETE"}
    if "ArtifactBucket" in outputs:
        result["retained_bucket"] = outputs["ArtifactBucket"]  # delete it yourself once its artifacts are not needed
    return result


def status(cf, stack: str) -> dict:
    current = _describe(cf, stack)
    if current is None:
        return {"stage": "infra", "uri": f"cloudformation:{stack}", "stack": stack, "status": "absent"}
    return _result(cf, stack, None, current)


# ------------------------------------------------------------------------- helpers
def _template_body(template: Path) -> str:
    if not template.is_file():
        raise DorylusError(f"template {template} not found; pass --template, or run from a checkout with infra/aws/")
    body = template.read_text()
    if len(body.encode()) > TEMPLATE_BODY_LIMIT:
        raise DorylusError(f"template {template} is over CloudFormation's {TEMPLATE_BODY_LIMIT}-byte inline limit")
    return body


def _previous(current: dict, declared: dict, given: dict) -> list[dict]:
    """The deployed values of the parameters not given now, to keep them.

    Values equal to the template's default are left out, so they follow the template.
    """
    kept = []
    for p in current.get("Parameters", []):
        key = p["ParameterKey"]
        if key in given or key not in declared:
            continue
        if p.get("ParameterValue") == "****":  # NoEcho: only CloudFormation knows it
            kept.append({"ParameterKey": key, "UsePreviousValue": True})
        elif str((declared[key] or {}).get("Type", "")).startswith("AWS::SSM::Parameter::") and "ResolvedValue" not in p:
            continue  # an emulator that reports the resolved value in place of the SSM name: use the default name
        elif "Default" in (declared[key] or {}) and str(declared[key]["Default"]) == p.get("ParameterValue"):
            continue  # at the template's default: leave it to the template (emulators see a change otherwise)
        else:
            kept.append({"ParameterKey": key, "ParameterValue": p.get("ParameterValue", "")})
    return kept


def _declared_parameters(cf, body: str) -> dict[str, dict]:
    """The template's parameters (name: declaration), after CloudFormation has validated it."""
    import yaml

    try:
        cf.validate_template(TemplateBody=body)
    except cf.exceptions.ClientError as exc:
        raise DorylusError(f"CloudFormation rejects the template: {_message(exc)}") from None

    class Loader(yaml.SafeLoader):  # CloudFormation's short forms (!Ref, !Sub, ...) as plain values
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return dict((yaml.load(body, Loader=Loader) or {}).get("Parameters") or {})  # safe: a SafeLoader


def _describe(cf, stack: str) -> dict | None:
    try:
        stacks = cf.describe_stacks(StackName=stack)["Stacks"]
    except cf.exceptions.ClientError as exc:
        if "does not exist" in str(exc):
            return None
        raise DorylusError(f"cannot describe stack {stack}: {_message(exc)}") from None
    live = [s for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"]
    return live[0] if live else None


def _wait(cf, stack: str, waiter: str) -> None:
    from botocore.exceptions import WaiterError

    try:
        # the waiter asks at once and sleeps only while the stack is still in progress
        cf.get_waiter(waiter).wait(StackName=stack, WaiterConfig={"Delay": 10, "MaxAttempts": 360})
    except WaiterError:
        raise DorylusError(f"stack {stack} did not reach {waiter.removeprefix('stack_').replace('_', ' ')}: " + _failures(cf, stack)) from None


def _failures(cf, stack: str) -> str:
    try:
        events = cf.describe_stack_events(StackName=stack)["StackEvents"]
    except cf.exceptions.ClientError:
        return "see the stack's events in the CloudFormation console"
    failed = [f"{e['LogicalResourceId']}: {e.get('ResourceStatusReason', e['ResourceStatus'])}"
              for e in events if e["ResourceStatus"].endswith("FAILED")]
    return "; ".join(failed[:5]) or "see the stack's events in the CloudFormation console"


def _outputs(stack: dict) -> dict[str, str]:
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def _result(cf, stack: str, action: str | None, current: dict | None = None) -> dict:
    current = current or _describe(cf, stack)
    result = {"stage": "infra", "uri": current["StackId"], "stack": stack, "status": current["StackStatus"]}
    if action:
        result["action"] = action
    result["outputs"] = _outputs(current)
    result["parameters"] = {p["ParameterKey"]: p.get("ResolvedValue", p.get("ParameterValue")) for p in current.get("Parameters", [])}
    return result


def _message(exc) -> str:
    return exc.response.get("Error", {}).get("Message", str(exc)) if hasattr(exc, "response") else str(exc)
