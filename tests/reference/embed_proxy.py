"""A front for an embedding server, for the remote-backend tests: it forwards POST .../embeddings
to the real server and logs every input it got vectors for, and can misbehave on purpose:
answer 429 with Retry-After to the first N requests, delay every answer, or stop dead (close
its port, like a killed server) after K answered requests. With --tokenizer it also answers
text-embeddings-inference's POST /tokenize with that tokenizer.json (the `tokenizers` library).

usage: embed_proxy.py PORT UPSTREAM LOG [--throttle N] [--retry-after S] [--delay S] [--die-after K]
                      [--tokenizer TOKENIZER_JSON]
LOG gets one JSON line per request: {"t": time, "status": code, "inputs": [...]}.
"""
import argparse
import json
import os
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("upstream")
    ap.add_argument("log")
    ap.add_argument("--throttle", type=int, default=0)
    ap.add_argument("--retry-after", type=float, default=1.0)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--die-after", type=int, default=0)
    ap.add_argument("--tokenizer")
    args = ap.parse_args()
    tokenizer = None
    if args.tokenizer:
        from tokenizers import Tokenizer
        tokenizer = Tokenizer.from_file(args.tokenizer)
        tokenizer.no_truncation()
        tokenizer.no_padding()
    lock = threading.Lock()
    state = {"seen": 0, "answered": 0}

    def log(status, inputs):
        with lock, open(args.log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"t": time.time(), "status": status, "inputs": inputs}) + "\n")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, body, headers=()):
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            try:
                with urllib.request.urlopen(args.upstream + self.path, timeout=30) as r:
                    self.reply(r.status, r.read())
            except urllib.error.HTTPError as e:
                self.reply(e.code, e.read())

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path.rstrip("/").endswith("/tokenize"):
                if tokenizer is None:
                    self.reply(404, b'{"error":"no tokenize route"}')
                    return
                req = json.loads(body)
                texts = req["inputs"] if isinstance(req["inputs"], list) else [req["inputs"]]
                out = []
                for t in texts:
                    enc = tokenizer.encode(t, add_special_tokens=req.get("add_special_tokens", True))
                    out.append([{"id": i, "text": tok, "special": s == 1, "start": o[0], "stop": o[1]}
                                for i, tok, s, o in zip(enc.ids, enc.tokens, enc.special_tokens_mask,
                                                        enc.offsets)])
                self.reply(200, json.dumps(out).encode())
                return
            inputs = json.loads(body).get("input", [])
            with lock:
                state["seen"] += 1
                throttled = state["seen"] <= args.throttle
            if throttled:
                log(429, inputs)
                self.reply(429, b'{"error":"slow down"}', [("Retry-After", str(args.retry_after))])
                return
            if args.delay:
                time.sleep(args.delay)
            req = urllib.request.Request(args.upstream + self.path, data=body,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=120) as r:
                    out = r.read()
                    code = r.status
            except urllib.error.HTTPError as e:
                out, code = e.read(), e.code
            log(code, inputs)
            self.reply(code, out)
            if code == 200 and args.die_after:
                with lock:
                    state["answered"] += 1
                    dead = state["answered"] >= args.die_after
                if dead:
                    self.wfile.flush()
                    os._exit(0)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
