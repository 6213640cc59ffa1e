"""A bounded burst of concurrent requests to an OpenAI-compatible server on localhost, with the standard
library alone: completions streamed and not, some clients disconnecting mid-stream, some requests
ending on a stop string. Used by `benchmarks/serving_burst.py` and the server test.

Run alone: `python -m stallfree.serving.burst PORT MODEL` prints one line per request and a summary.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

HOST = "127.0.0.1"  # localhost only


@dataclass(frozen=True, slots=True)
class Ask:
    """One request: its prompt, max_tokens, stream or not, a stop string, and for a stream the
    number of chunks after which the client disconnects (None: it reads to the end)."""

    prompt: str
    max_tokens: int
    stream: bool = False
    stop: tuple[str, ...] = ()
    disconnect_after: int | None = None


@dataclass(slots=True)
class Answer:
    text: str = ""
    finish_reason: str | None = None
    chunks: int = 0
    disconnected: bool = False
    status: int = 0
    first_token_s: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    seconds: float = 0.0


def ask(port: int, model: str, a: Ask, timeout: float = 600.0) -> Answer:
    """Send `a`; return what came back (greedy sampling)."""
    body = {"model": model, "prompt": a.prompt, "max_tokens": a.max_tokens, "temperature": 0.0, "stream": a.stream}
    if a.stop:
        body["stop"] = list(a.stop)
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    answer, start = Answer(), time.perf_counter()
    try:
        connection.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer.status = response.status
        if not a.stream:
            choice = json.loads(response.read())["choices"][0]
            answer.text, answer.finish_reason = choice["text"], choice["finish_reason"]
            answer.first_token_s = time.perf_counter() - start
            return answer
        _read_stream(response, a, answer, start)
        return answer
    finally:
        answer.seconds = time.perf_counter() - start
        connection.close()  # a disconnect mid-stream: the server sees the client go and aborts the request


def _read_stream(response: http.client.HTTPResponse, a: Ask, answer: Answer, start: float) -> None:
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        choice = json.loads(line[len("data: "):])["choices"][0]
        now = time.perf_counter() - start
        if choice.get("text"):
            answer.first_token_s = answer.first_token_s if answer.first_token_s is not None else now
            answer.chunk_times.append(now)
        answer.text += choice.get("text", "")
        answer.finish_reason = choice.get("finish_reason") or answer.finish_reason
        answer.chunks += 1
        if a.disconnect_after is not None and answer.chunks >= a.disconnect_after:
            answer.disconnected = True
            return


def burst(port: int, model: str, asks: list[Ask], concurrency: int = 16) -> list[Answer]:
    """Send every ask at once (up to `concurrency` in flight); the answers, in the asks' order."""
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(lambda a: ask(port, model, a), asks))


def standard_asks(prompts: list[str], stops: dict[int, str]) -> list[Ask]:
    """The burst of the server test: for each prompt one plain and one streamed ask; every third
    stream disconnects after 2 chunks; `stops` adds a stop string to the plain ask of that prompt."""
    asks = []
    for i, prompt in enumerate(prompts):
        stop = (stops[i],) if i in stops else ()
        asks.append(Ask(prompt, 16, stop=stop))
        asks.append(Ask(prompt, 16, stream=True, stop=stop, disconnect_after=2 if i % 3 == 0 else None))
    return asks


if __name__ == "__main__":
    from .tiny import text

    port, model = int(sys.argv[1]), sys.argv[2]
    prompts = [text([(i * 31 + j) % 900 + 2 for j in range(10 + i * 7)]) for i in range(6)]
    for a, got in zip(asks := standard_asks(prompts, {5: "w609 w211 w609"}), burst(port, model, asks), strict=True):
        print(json.dumps({"stream": a.stream, "stop": a.stop, "disconnect_after": a.disconnect_after,
                          "status": got.status, "finish_reason": got.finish_reason, "chunks": got.chunks,
                          "text": got.text[:80]}))
