"""A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands
on fd 3, replies on fd 4, each a JSON message ending in NUL), so a test can press keys in a page and
read what its script did, with nothing but the standard library."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

# Debian and Ubuntu name the binaries chromium / chromium-browser; the headless build is
# chromium-headless-shell (Debian's package of that name, and Chrome for Testing's).
NAMES = ("chromium", "chromium-browser", "chromium-headless-shell", "headless_shell")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
KEY_CODES = {"ArrowLeft": 37, "ArrowRight": 39, "Home": 36, "End": 35}
MAX_MESSAGES = 10_000  # replies and events read while waiting for one answer, before giving up


def find_chromium() -> str | None:
    found = (shutil.which(name) for name in NAMES)
    return next((path for path in found if path is not None), None)


class Browser:
    """One page of a headless Chromium, driven by DevTools commands."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:  # in the child: the protocol's ends on fds 3 and 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, pass_fds=(3, 4))  # 3 and 4 are kept open past preexec_fn
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.session: str | None = None
        target = self.command("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.command("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def command(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session is not None and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        for _ in range(MAX_MESSAGES):
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
        raise RuntimeError(f"{method}: no reply within {MAX_MESSAGES} messages")

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)  # type: ignore[no-any-return]

    def evaluate(self, expression: str) -> Any:
        result = self.command("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        """Load `url` and wait until it has loaded (the page's scripts have run)."""
        self.command("Page.enable")
        self.command("Page.navigate", url=url)
        for _ in range(MAX_MESSAGES):
            if self.evaluate("document.readyState") == "complete":
                return
        raise RuntimeError(f"{url} did not load")

    def press(self, key: str) -> None:
        """A real key press (down, then up) to whatever has the focus."""
        code = KEY_CODES[key]
        for kind in ("rawKeyDown", "keyUp"):
            self.command("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code,
                         nativeVirtualKeyCode=code)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # it may close the pipe before it answers
            self.command("Browser.close")
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
