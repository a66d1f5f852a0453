"""The ``lambda`` backend: tensor tasks as AWS Lambda invocations of the tensor worker.

Each attempt of a task is one synchronous (``RequestResponse``) ``Invoke`` of the
function, made from its own thread. The event is the same the local pool's processes
get (``worker.handler``): the task, the graph and parameter server endpoints and the
per-run data-plane key, never AWS credentials. The function FETCHes its inputs from the
graph server and sends its RESULT back over the data plane, so what the invoker learns
from the response is only whether the attempt failed.

- The client has a long read timeout and botocore's retries off: a slow task must not
  be invoked a second time behind our back (the straggler monitor decides that).
- ``TooManyRequestsException`` (throttling) is retried with exponential backoff and
  jitter, for at most ``throttle_limit_s``; after that the attempt counts as failed.
- A failed attempt (``FunctionError``, or an error calling Lambda) is retried up to
  ``max_attempts`` attempts in all; then the task fails and the run stops with an error
  naming the function and its last error. A failure of an attempt whose task already
  has its result loses nothing and is ignored.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from stages.errors import DorylusError
from stages.train.backends import RemoteInvoker

log = logging.getLogger("dorylus.train.lambda")

READ_TIMEOUT_S = 900  # Lambda's maximum run time: the response may take that long
MAX_ATTEMPTS = 3
THROTTLE_LIMIT_S = 300.0
BACKOFF_BASE_S = 0.1
BACKOFF_CAP_S = 10.0


def backoff_delay(retry: int, base: float = BACKOFF_BASE_S, cap: float = BACKOFF_CAP_S, rng=random) -> float:
    """Seconds to wait before retry number ``retry`` (0, 1, ...) of a throttled call.

    Exponential with "equal jitter": half of ``min(cap, base * 2**retry)`` for sure, the
    other half random, so throttled invokers spread out instead of retrying in step.
    """
    ceiling = min(cap, base * 2**retry)
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def lambda_client(settings: dict, max_connections: int = 10):
    """A Lambda client for the backend: long reads, no automatic retries."""
    config = Config(read_timeout=READ_TIMEOUT_S, connect_timeout=10, retries={"max_attempts": 0},
                    max_pool_connections=max(10, max_connections))
    return boto3.client("lambda", region_name=settings.get("region"), endpoint_url=settings.get("endpoint_url"),
                        config=config)


def check_function(settings: dict) -> dict:
    """The function's configuration, or a ``DorylusError`` saying why it cannot be used."""
    name = settings["function"]
    where = f" at {settings['endpoint_url']}" if settings.get("endpoint_url") else ""
    try:
        return lambda_client(settings).get_function_configuration(FunctionName=name)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            raise DorylusError(f"the Lambda function {name!r} does not exist{where}; deploy it (`dorylus infra up`) "
                               f"or pass --lambda-function") from None
        raise DorylusError(f"cannot use the Lambda function {name!r}{where}: {exc}") from None
    except BotoCoreError as exc:  # no credentials, no region, endpoint unreachable
        raise DorylusError(f"cannot reach the Lambda function {name!r}{where}: {exc}") from None


class LambdaInvoker(RemoteInvoker):
    def __init__(self, server, settings: dict, relaunch_ratio: float, relaunch_min_s: float,
                 max_attempts: int = MAX_ATTEMPTS, throttle_limit_s: float = THROTTLE_LIMIT_S):
        intervals = len(server.intervals)
        # one task per interval at a time: more concurrent invocations than intervals never help
        super().__init__(server, relaunch_ratio, relaunch_min_s, max_concurrency=intervals)
        self.function = settings["function"]
        self.client = lambda_client(settings, max_connections=2 * intervals)
        self.max_attempts, self.throttle_limit_s = max_attempts, throttle_limit_s
        self.attempts_running: dict[int, int] = {}  # task id -> its invocations in progress
        self.invocations = 0
        self.throttled = 0
        self.failed_invocations = 0

    def running(self) -> int:
        # tasks, not invocations: a straggler's relaunch takes no second slot, and a hung
        # invocation whose task has its result (from another attempt) takes none at all
        return sum(1 for t in self.attempts_running if t in self.inflight and not self.inflight[t].done.is_set())

    def _attempting(self, task_id: int) -> bool:
        return task_id in self.attempts_running

    def status(self) -> dict:
        return {**super().status(), "invocations": self.invocations, "throttled": self.throttled,
                "failed_invocations": self.failed_invocations}

    def _launch(self, task_id, fl, send) -> None:
        self.attempts_running[task_id] = self.attempts_running.get(task_id, 0) + 1
        event = fl.event
        threading.Thread(target=self._invoke, args=(task_id, event), name=f"lambda-{task_id}", daemon=True).start()

    def _invoke(self, task_id: int, event: dict) -> None:
        try:
            error = self._call(event)
        finally:
            with self.lock:
                self.attempts_running[task_id] -= 1
                if not self.attempts_running[task_id]:
                    del self.attempts_running[task_id]
            self.server.wake()  # a slot may be free
        if error is not None and not self._stop.is_set():
            with self.lock:
                self.failed_invocations += 1
            self._fail_attempt(task_id, error, self.max_attempts, f"Lambda function {self.function!r}")

    def _call(self, event: dict) -> str | None:
        """One attempt: invoke until it is not throttled; returns None or the error."""
        payload = json.dumps(event, separators=(",", ":")).encode()
        throttled_since, retry = None, 0
        while not self._stop.is_set():
            try:
                with self.lock:
                    self.invocations += 1
                response = self.client.invoke(FunctionName=self.function, InvocationType="RequestResponse",
                                              Payload=payload)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code != "TooManyRequestsException":
                    return f"{code}: {exc.response.get('Error', {}).get('Message', exc)}"
                with self.lock:
                    self.throttled += 1
                if throttled_since is None:
                    log.info("Lambda function %r is throttled; backing off", self.function)
                    throttled_since = time.monotonic()
                if time.monotonic() - throttled_since > self.throttle_limit_s:
                    return f"throttled (TooManyRequestsException) for over {self.throttle_limit_s:.0f} s"
                self._stop.wait(backoff_delay(retry))
                retry += 1
                continue
            except BotoCoreError as exc:
                return f"{type(exc).__name__}: {exc}"
            body = response["Payload"].read()
            if response.get("FunctionError"):
                return f"{response['FunctionError']} function error: {_error_message(body)}"
            return None
        return None


def _error_message(body: bytes) -> str:
    """The error of a failed invocation's payload, in one short line."""
    text = body.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return text[-500:]
    if isinstance(doc, dict) and "errorMessage" in doc:
        return f"{doc.get('errorType', 'Error')}: {doc['errorMessage']}"[:500]
    return text[-500:]
