"""``dorylus infra up|down|status`` against moto's CloudFormation on 127.0.0.1.

What moto cannot do (a TCP listener; deleting a VPC's route table) is listed in
tests/infra/conftest.py; the lifecycle runs on the template minus those parts.
"""

from __future__ import annotations

import json

import boto3
import pytest

from flows.cli import main
from tests.infra.conftest import deletable_template, moto_template, project  # noqa: F401  (fixtures)

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/{project}/{name}@sha256:" + "a" * 64


def infra(capsys, *args) -> tuple[int, dict | str]:
    code = main(["infra", *args])
    captured = capsys.readouterr()
    if code != 0:
        return code, captured.err
    return code, json.loads(captured.out) if "--json" in args else captured.out


def test_up_creates_then_updates_the_whole_deployment(moto_template, project, capsys):
    code, created = infra(capsys, "up", "--json", "--template", str(moto_template), "--stack-name", project,
                          "--param", f"ProjectName={project}")
    assert code == 0, created
    assert created["action"] == "created" and created["status"] == "CREATE_COMPLETE"
    out = created["outputs"]
    assert out["ArtifactStore"] == f"s3://{out['ArtifactBucket']}/store"
    assert out["LambdaRepositoryUri"].endswith(f"/{project}/lambda")
    assert out["SchedulerAddress"].startswith("tcp://") and out["SchedulerAddress"].endswith(":8786")
    assert "TensorWorkerFunction" not in out  # no image yet: no function

    # the deployed resources are real on the endpoint
    ecr = boto3.client("ecr")
    repo = ecr.describe_repositories(repositoryNames=[f"{project}/lambda"])["repositories"][0]
    assert repo["imageTagMutability"] == "IMMUTABLE"
    s3 = boto3.client("s3")  # moto applies the bucket's encryption (not its public-access block)
    rule = s3.get_bucket_encryption(Bucket=out["ArtifactBucket"])["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    ec2 = boto3.client("ec2")
    [gs] = ec2.describe_security_groups(GroupIds=[out["GraphServerSecurityGroup"]])["SecurityGroups"]
    from_lambda = [p for p in gs["IpPermissions"] if any(g["GroupId"] == out["LambdaSecurityGroup"] for g in p.get("UserIdGroupPairs", []))]
    assert [(p["FromPort"], p["ToPort"]) for p in from_lambda] == [(5555, 5600)]

    # second step: the function and the servers, with the image parameters; others keep their values
    code, updated = infra(capsys, "up", "--json", "--template", str(moto_template), "--stack-name", project,
                          "--param", f"LambdaImageUri={IMAGE.format(project=project, name='lambda')}",
                          "--param", f"GraphServerImageUri={IMAGE.format(project=project, name='graph-server')}",
                          "--param", "LambdaMemoryMB=4096", "--param", "LambdaReservedConcurrency=50")
    assert code == 0, updated
    assert updated["action"] == "updated" and updated["status"] == "UPDATE_COMPLETE"
    assert updated["parameters"]["ProjectName"] == project and updated["parameters"]["LambdaMemoryMB"] == "4096"
    function = updated["outputs"]["TensorWorkerFunction"]
    lam = boto3.client("lambda")
    config = lam.get_function(FunctionName=function)["Configuration"]
    assert config["MemorySize"] == 4096 and config["Timeout"] == 300
    assert config["VpcConfig"]["SecurityGroupIds"] == [out["LambdaSecurityGroup"]]
    assert lam.get_function_concurrency(FunctionName=function)["ReservedConcurrentExecutions"] == 50
    groups = boto3.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[updated["outputs"]["GraphServerGroup"]])["AutoScalingGroups"]
    assert groups[0]["DesiredCapacity"] == 2

    code, status = infra(capsys, "status", "--json", "--stack-name", project)
    assert code == 0 and status["status"] == "UPDATE_COMPLETE" and status["outputs"] == updated["outputs"]


def test_down_deletes_the_stack_and_keeps_the_bucket(deletable_template, project, capsys):
    code, created = infra(capsys, "up", "--json", "--template", str(deletable_template), "--stack-name", project,
                          "--param", f"ProjectName={project}")
    assert code == 0, created
    bucket = created["outputs"]["ArtifactBucket"]
    code, deleted = infra(capsys, "down", "--json", "--stack-name", project)
    assert code == 0, deleted
    assert deleted == {"stage": "infra", "uri": f"cloudformation:{project}", "stack": project, "action": "deleted",
                       "status": "DELETE_COMPLETE", "retained_bucket": bucket}
    ecr = boto3.client("ecr")
    with pytest.raises(ecr.exceptions.RepositoryNotFoundException):
        ecr.describe_repositories(repositoryNames=[f"{project}/lambda"])
    boto3.client("s3").head_bucket(Bucket=bucket)  # retained: artifacts outlive the stack
    assert infra(capsys, "status", "--json", "--stack-name", project)[1]["status"] == "absent"
    assert infra(capsys, "down", "--json", "--stack-name", project)[1]["action"] == "absent"


def test_user_errors_exit_2_with_one_line(moto_template, project, capsys, store):
    code, err = infra(capsys, "up", "--template", str(moto_template), "--stack-name", project, "--param", "NoSuchParameter=1")
    assert code == 2 and "unknown template parameter(s) NoSuchParameter" in err and "Traceback" not in err
    code, err = infra(capsys, "up", "--template", str(moto_template), "--stack-name", project, "--param", "oops")
    assert code == 2 and "KEY=VALUE" in err
    code, err = infra(capsys, "up", "--template", "/nonexistent/template.yaml", "--stack-name", project)
    assert code == 2 and "not found" in err
    code, err = infra(capsys, "up", "--template", str(moto_template), "--stack-name", project, "--build", "abcdef", "--store", store.uri)
    assert code == 2 and "no artifact 'abcdef'" in err


def test_up_from_a_build_needs_pushed_images(moto_template, project, capsys, monkeypatch, store):
    from stages.build import build

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    skipped = build(store=store)
    code, err = infra(capsys, "up", "--template", str(moto_template), "--stack-name", project,
                      "--build", skipped.key, "--store", store.uri)
    assert code == 2 and "has no pushed lambda image (skipped)" in err and "dorylus build --push" in err


def test_missing_aws_configuration_is_a_user_error(capsys, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    code, err = infra(capsys, "status", "--stack-name", "dorylus")
    assert code == 2 and err.startswith("error: AWS: ") and "aws configure" in err and "Traceback" not in err
