"""A local Prefect server on 127.0.0.1, started and stopped by this process.

Used by ``dorylus serve --start-server`` and by the tests of schedules. It shares the
project's Prefect home (database under ``.dorylus/prefect``) unless told otherwise.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from flows import settings
from stages.errors import DorylusError


class PrefectServer:
    def __init__(self, port: int = 4200, home: Path | None = None, startup_timeout: float = 120.0):
        self.port = port
        self.home = Path(home) if home else settings.prefect_home()
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self) -> "PrefectServer":
        settings.configure()
        exe = shutil.which("prefect", path=str(Path(sys.executable).parent)) or shutil.which("prefect")
        if exe is None:
            raise DorylusError("the prefect command is not installed in this environment; pip install prefect")
        env = {**os.environ, "PREFECT_HOME": str(self.home)}
        env.pop("PREFECT_API_URL", None)
        self.home.mkdir(parents=True, exist_ok=True)
        self.log = open(self.home / f"server-{self.port}.log", "ab")
        self.proc = subprocess.Popen(
            [exe, "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DorylusError(f"the Prefect server exited at start (status {self.proc.returncode}); see {self.log.name}")
            try:
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise DorylusError(f"the Prefect server did not answer on {self.api_url} within {self.startup_timeout:.0f} s; see {self.log.name}")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the server and its children
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None
        self.log.close()

    def __enter__(self) -> "PrefectServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
