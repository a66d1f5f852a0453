"""The CloudFormation template (infra/aws/dorylus.yaml): cfn-lint, and the properties the
deployment promises (private network, data-plane-only access from Lambda, encrypted
private bucket, immutable repositories, least-privilege roles)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flows.commands.infra import TEMPLATE
from tests.infra.conftest import load_template


@pytest.fixture(scope="module")
def template() -> dict:
    return load_template()


def resources(template, kind):
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def test_cfn_lint_passes():
    exe = Path(sys.executable).with_name("cfn-lint")
    done = subprocess.run([str(exe), str(TEMPLATE)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_network_is_private(template):
    assert not resources(template, "AWS::EC2::InternetGateway") and not resources(template, "AWS::EC2::NatGateway")
    for subnet in resources(template, "AWS::EC2::Subnet").values():
        assert subnet["Properties"]["MapPublicIpOnLaunch"] is False
    services = {json.dumps(e["Properties"]["ServiceName"]).split(".")[-1].strip('"}') for e in resources(template, "AWS::EC2::VPCEndpoint").values()}
    assert {"s3", "api", "dkr", "lambda", "logs", "ssm"} <= services
    lb = template["Resources"]["SchedulerLoadBalancer"]["Properties"]
    assert lb["Scheme"] == "internal" and lb["Type"] == "network"


def test_lambda_reaches_graph_servers_on_the_data_plane_only(template):
    from_lambda = [r["Properties"] for r in resources(template, "AWS::EC2::SecurityGroupIngress").values()
                   if r["Properties"].get("SourceSecurityGroupId") == {"Ref": "LambdaSecurityGroup"}]
    assert from_lambda == [{
        "GroupId": {"Ref": "GraphServerSecurityGroup"}, "IpProtocol": "tcp",
        "FromPort": {"Ref": "DataPlanePortFrom"}, "ToPort": {"Ref": "DataPlanePortTo"},
        "SourceSecurityGroupId": {"Ref": "LambdaSecurityGroup"}, "Description": "data plane from tensor workers",
    }]
    egress = [r["Properties"] for r in resources(template, "AWS::EC2::SecurityGroupEgress").values()
              if r["Properties"]["GroupId"] == {"Ref": "LambdaSecurityGroup"}]
    assert [(e["FromPort"], e["DestinationSecurityGroupId"]) for e in egress] == [({"Ref": "DataPlanePortFrom"}, {"Ref": "GraphServerSecurityGroup"})]
    inline = template["Resources"]["LambdaSecurityGroup"]["Properties"]["SecurityGroupEgress"]
    assert [(r["FromPort"], r["ToPort"]) for r in inline] == [(443, 443)]
    # nothing else may open the graph servers to the whole VPC or the world
    for rule in resources(template, "AWS::EC2::SecurityGroupIngress").values():
        assert "CidrIp" not in rule["Properties"]
    assert "SecurityGroupIngress" not in template["Resources"]["GraphServerSecurityGroup"]["Properties"]


def test_bucket_is_private_and_encrypted(template):
    bucket = template["Resources"]["ArtifactBucket"]
    props = bucket["Properties"]
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert bucket["DeletionPolicy"] == "Retain"
    policy = template["Resources"]["ArtifactBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert policy[0]["Effect"] == "Deny" and policy[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_repositories_have_immutable_tags(template):
    repos = resources(template, "AWS::ECR::Repository")
    assert {json.dumps(r["Properties"]["RepositoryName"]) for r in repos.values()} == {
        json.dumps({"Fn::Sub": "${ProjectName}/graph-server"}), json.dumps({"Fn::Sub": "${ProjectName}/lambda"})}
    for repo in repos.values():
        assert repo["Properties"]["ImageTagMutability"] == "IMMUTABLE"


def test_function_is_vpc_attached_and_sized_by_parameters(template):
    fn = template["Resources"]["TensorWorkerFunction"]
    props = fn["Properties"]
    assert fn["Condition"] == "HasLambdaImage" and props["PackageType"] == "Image"
    assert props["MemorySize"] == {"Ref": "LambdaMemoryMB"} and props["Timeout"] == {"Ref": "LambdaTimeoutSeconds"}
    assert props["ReservedConcurrentExecutions"] == {"Ref": "LambdaReservedConcurrency"}
    assert props["VpcConfig"]["SecurityGroupIds"] == [{"Ref": "LambdaSecurityGroup"}]
    assert template["Parameters"]["LambdaTimeoutSeconds"]["MaxValue"] == 900
    assert template["Parameters"]["LambdaMemoryMB"]["MaxValue"] == 10240


# Actions that accept no resource ARN: "*" is the only way to grant them
RESOURCELESS = {"ecr:GetAuthorizationToken", "ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces",
                "ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"}


def _statements(template):
    for name, res in template["Resources"].items():
        if res["Type"] == "AWS::IAM::Role":
            for policy in res["Properties"].get("Policies", []):
                yield from ((name, s) for s in policy["PolicyDocument"]["Statement"])
        elif res["Type"] == "AWS::IAM::ManagedPolicy":
            yield from ((name, s) for s in res["Properties"]["PolicyDocument"]["Statement"])


def test_roles_are_least_privilege(template):
    statements = list(_statements(template))
    assert statements
    for owner, s in statements:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        assert s["Effect"] == "Allow"
        assert not any(a == "*" or a.endswith(":*") for a in actions), (owner, actions)
        if s["Resource"] == "*":
            assert set(actions) <= RESOURCELESS, (owner, actions)
    for name, role in resources(template, "AWS::IAM::Role").items():
        for arn in role["Properties"].get("ManagedPolicyArns", []):
            text = json.dumps(arn)
            assert "AdministratorAccess" not in text and "FullAccess" not in text, name


def test_servers_run_the_graph_server_image_from_launch_templates(template):
    for name, mode in (("GraphServerLaunchTemplate", "worker tcp://"), ("SchedulerLaunchTemplate", "scheduler")):
        data = template["Resources"][name]["Properties"]["LaunchTemplateData"]
        script = data["UserData"]["Fn::Base64"]["Fn::Sub"]
        assert "${GraphServerImageUri} " + mode in script
        assert data["MetadataOptions"]["HttpTokens"] == "required"
        assert all(d["Ebs"]["Encrypted"] for d in data["BlockDeviceMappings"])
    group = template["Resources"]["GraphServerGroup"]["Properties"]
    assert group["DesiredCapacity"] == {"Ref": "GraphServerCount"}
    assert template["Resources"]["SchedulerGroup"]["Properties"]["TargetGroupARNs"] == [{"Ref": "SchedulerTargetGroup"}]
