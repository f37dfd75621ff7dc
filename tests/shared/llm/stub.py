"""A local OpenAI-compatible HTTP server (``server`` fixture): what litellm's real HTTP path
reaches through ``api_base``, as llama.cpp's server, Ollama or vLLM would answer it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Server:
    """Answers ``POST /v1/chat/completions`` with ``status`` and an OpenAI-shaped reply whose
    content is ``reply`` (or ``reply(body)``, when it is a function of the request), and
    records each request's path, headers and body."""

    def __init__(self) -> None:
        self.status = 200
        self.reply: str | Callable[[dict[str, Any]], str] = "from the stub"
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((self.path, headers, body))
                if outer.status == 200:
                    content = outer.reply(body) if callable(outer.reply) else outer.reply
                    payload: dict[str, Any] = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
                    }
                else:
                    payload = {"error": {"message": "no", "type": "error", "code": None}}
                data = json.dumps(payload).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"


def serving() -> Iterator[Server]:
    """A running ``Server`` until the generator is closed (a fixture's body)."""
    stub = Server()
    thread = threading.Thread(target=stub.http.serve_forever, daemon=True)
    thread.start()
    yield stub
    stub.http.shutdown()
    stub.http.server_close()
