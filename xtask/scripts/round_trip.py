"""One round trip through an installed `looprail gateway`, with no Rust toolchain around: a fake
OpenAI upstream in this process, the gateway started by the given command, one chat completion
through it, then the command stopped. Exits 0 when the reply came back through the gateway (its
run header set) and, once the command was stopped, nothing listens on the gateway's port any more.

usage: round_trip.py [--stop-group] COMMAND... (e.g. `looprail`, or `--stop-group npx looprail`)

The command is stopped the way a process manager does it, with SIGTERM to the started process
alone (a wrapper must pass it on to the binary), or with `--stop-group` the way a terminal's
Ctrl-C does, with SIGINT to its whole process group (for launchers such as npx that do not pass
signals on).
"""
import json
import os
import signal
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
    stop_group = command[:1] == ["--stop-group"]
    if stop_group:
        command = command[1:]
    upstream = HTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        gateway = subprocess.Popen(
            command + ["gateway", "--listen", f"127.0.0.1:{port}", "--store", os.path.join(work, "gw.db"),
                       "--openai-upstream", f"http://127.0.0.1:{upstream.server_port}", "--no-record"],
            env={**os.environ, "OPENAI_API_KEY": "sk-test"}, start_new_session=True)
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
            try:
                if stop_group:
                    os.killpg(gateway.pid, signal.SIGINT)
                else:
                    gateway.terminate()
            except ProcessLookupError:
                pass
            try:
                gateway.wait(timeout=10)
            finally:
                stopped = closed(port)
                # Whatever happened, leave nothing behind on this machine.
                try:
                    os.killpg(gateway.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if not stopped:
            sys.exit(f"round trip: the gateway still listens on {port} after `{' '.join(command)}` was stopped")


def closed(port):
    """Whether nothing accepts connections on `port` within a few seconds."""
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


main()
