"""One round trip through an installed `looprail gateway`, with no Rust toolchain around: a fake
OpenAI upstream in this process, the gateway started by the given command, one chat completion
through it. Exits 0 when the reply came back through the gateway (its run header set).

usage: round_trip.py COMMAND... (e.g. `looprail`, or `npx looprail`)
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer


class Upstream(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "pong"}}],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    command = sys.argv[1:]
    upstream = HTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        gateway = subprocess.Popen(
            command + ["gateway", "--listen", f"127.0.0.1:{port}", "--store", os.path.join(work, "gw.db"),
                       "--openai-upstream", f"http://127.0.0.1:{upstream.server_port}", "--no-record"],
            env={**os.environ, "OPENAI_API_KEY": "sk-test"})
        try:
            for _ in range(200):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.05)
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "ping"}]}).encode(),
                headers={"content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = json.load(response)
                run = response.headers.get("x-looprail-run")
            text = answer["choices"][0]["message"]["content"]
            if text != "pong" or not run:
                sys.exit(f"round trip: unexpected answer {answer} (run header {run!r})")
            print(f"round trip through the gateway: {text!r}, conversation {run}")
        finally:
            gateway.terminate()
            gateway.wait(timeout=10)


main()
