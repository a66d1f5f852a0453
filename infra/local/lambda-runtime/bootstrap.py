"""Run one Lambda invocation the way moto's Docker Lambda calls a runtime image.

moto starts ``IMAGE HANDLER EVENT_JSON`` with the function's code unpacked in /var/task
and takes the last line of the output as the response; a non-zero exit status is a
function error. So: import the handler from /var/task (the function's code, ahead of
anything installed in the image), call it, print its JSON result as the last line.
Diagnostics go to stderr, which moto reads first. Like Lambda's runtime, it logs
START/END lines naming where the handler's module came from.
"""

import importlib
import json
import sys
import time
import traceback
import uuid

TASK_ROOT = "/var/task"


def main() -> int:
    handler_name, event = sys.argv[1], json.loads(sys.argv[2])
    request_id = str(uuid.uuid4())
    sys.path.insert(0, TASK_ROOT)
    module_name, _, function_name = handler_name.rpartition(".")
    t0 = time.monotonic()
    try:
        module = importlib.import_module(module_name)
        print(f"START RequestId: {request_id} Handler: {handler_name} Module: {module.__file__}", file=sys.stderr)
        result = getattr(module, function_name)(event, None)
    except Exception as exc:  # the function's error, reported as Lambda would
        traceback.print_exc(file=sys.stderr)
        print(json.dumps({"errorMessage": str(exc), "errorType": type(exc).__name__}))
        return 1
    print(f"END RequestId: {request_id} Duration: {1000 * (time.monotonic() - t0):.1f} ms", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
