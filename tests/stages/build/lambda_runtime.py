"""A minimal Lambda Runtime API on 127.0.0.1, to run the Lambda image as Lambda would.

No Runtime Interface Emulator can be fetched here, and moto's Lambda needs AWS's runtime
images, so the tests serve the four endpoints awslambdaric uses: next invocation,
response, invocation error and init error (API version 2018-06-01).
"""

from __future__ import annotations

import http.server
import json
import queue
import threading
import time
import uuid

PREFIX = "/2018-06-01/runtime"


class LambdaRuntimeAPI:
    def __init__(self):
        self.events: queue.Queue = queue.Queue()
        self.results: dict[str, queue.Queue] = {}
        self.init_errors: list[dict] = []
        self.polled = threading.Event()  # set once the runtime asked for its first event
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, status: int, body: bytes = b"{}", headers: dict | None = None):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path != f"{PREFIX}/invocation/next":
                    return self._reply(404)
                api.polled.set()
                request_id, payload = api.events.get()
                self._reply(200, payload, {
                    "Lambda-Runtime-Aws-Request-Id": request_id,
                    "Lambda-Runtime-Deadline-Ms": str(int((time.time() + 300) * 1000)),
                    "Lambda-Runtime-Invoked-Function-Arn": "arn:aws:lambda:us-east-1:123456789012:function:dorylus-test",
                    "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000",
                    "Content-Type": "application/json",
                })

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = self.path[len(PREFIX):].strip("/").split("/")
                if parts == ["init", "error"]:
                    api.init_errors.append(json.loads(body or b"{}"))
                    api.polled.set()
                elif len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
                    api.results.setdefault(parts[1], queue.Queue()).put((parts[2], json.loads(body or b"null")))
                else:
                    return self._reply(404)
                self._reply(202)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def invoke(self, event: dict, timeout: float = 120) -> tuple[str, object]:
        """Queue ``event`` and wait for ``("response"|"error", payload)``."""
        request_id = str(uuid.uuid4())
        self.results.setdefault(request_id, queue.Queue())
        self.events.put((request_id, json.dumps(event).encode()))
        return self.results[request_id].get(timeout=timeout)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
