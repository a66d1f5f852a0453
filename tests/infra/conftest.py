"""Templates for moto: the real template, minus what moto's CloudFormation cannot do.

moto 5.2 (checked 2026-12) creates and updates every resource of infra/aws/dorylus.yaml
except one, and silently skips three types:

- ``AWS::ElasticLoadBalancingV2::Listener`` with ``Protocol: TCP`` is rejected ("must be
  one of HTTP, HTTPS"): moto knows only application load balancers' listeners;
- ``AWS::EC2::SecurityGroupEgress``, ``AWS::S3::BucketPolicy`` and
  ``AWS::EC2::PlacementGroup`` are not supported and are ignored with a warning;
- of the bucket's properties moto applies only the encryption (not the public-access
  block, versioning, ownership controls or lifecycle rules);
- on delete, moto does not remove the VPC's route table, so the VPC's deletion fails with
  DependencyViolation and the stack cannot be deleted.

So the lifecycle tests deploy the template with the TCP listener removed, and test
deletion on the part of the template that moto can delete (no network resources).
The full template is checked by cfn-lint.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from flows.commands.infra import TEMPLATE

MOTO_REJECTS = ("SchedulerListener",)
NETWORK_TYPES = ("AWS::EC2::", "AWS::ElasticLoadBalancingV2::", "AWS::AutoScaling::", "AWS::Lambda::")


def load_template() -> dict:
    from cfnlint.decode import decode

    template, errors = decode(str(TEMPLATE))
    assert not errors, errors
    return template


def write_variant(path: Path, drop) -> Path:
    template = load_template()
    for name in list(template["Resources"]):
        if drop(name, template["Resources"][name]):
            del template["Resources"][name]
    kept = set(template["Resources"])
    template["Outputs"] = {k: v for k, v in template["Outputs"].items() if _refs(v) <= kept}
    used = json.dumps([template["Resources"], template["Outputs"]])
    template["Conditions"] = {k: v for k, v in template.get("Conditions", {}).items() if f'"{k}"' in used}
    if not template["Conditions"]:
        del template["Conditions"]
    # moto validates with cfn-lint and refuses unused parameters
    used = json.dumps([template["Resources"], template["Outputs"], template.get("Conditions", {})])
    template["Parameters"] = {k: v for k, v in template["Parameters"].items()
                              if f'"{k}"' in used or "${" + k + "}" in used or "${" + k + "." in used}
    path.write_text(json.dumps(template))
    return path


def _refs(value) -> set[str]:
    text = json.dumps(value)
    import re

    found = set(re.findall(r'"Ref": "(\w+)"', text)) | set(re.findall(r'"Fn::GetAtt": \["(\w+)"', text))
    found |= {m.split(".")[0] for m in re.findall(r"\$\{(\w+(?:\.\w+)?)\}", text)}
    return {f for f in found if not f.startswith("AWS") and f[0].isupper() and f not in load_template()["Parameters"]}


@pytest.fixture
def moto_template(tmp_path):
    """The full template without the resources moto rejects."""
    return write_variant(tmp_path / "moto.json", lambda name, res: name in MOTO_REJECTS)


@pytest.fixture
def deletable_template(tmp_path):
    """The part of the template moto can also delete: storage, repositories, logs and IAM."""
    return write_variant(tmp_path / "deletable.json",
                         lambda name, res: name in MOTO_REJECTS or res["Type"].startswith(NETWORK_TYPES))


@pytest.fixture
def project(moto_server):
    """A fresh stack and project name (repository names are account-wide)."""
    return f"t{uuid.uuid4().hex[:10]}"
