"""Serves a GGUF model with llama.cpp's own HTTP server (OpenAI-compatible), for end-to-end tests.

llama.cpp comes from the PyPI wheel `xllamacpp`, which embeds llama.cpp's server: no compiler, no download
outside the package registry. Binds 127.0.0.1 on a free port and prints `READY <base_url>` once it answers.
"""

import argparse
import os
import signal
import socket
import sys
import time
import urllib.request

import xllamacpp


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--chat-template", default="gemma")
    parser.add_argument("--ctx", type=int, default=2048)
    # One thread: on two busy cores, two threads made token speed swing tenfold.
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    port = free_port()
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    # The base Gemma GGUF has no Jinja template: use llama.cpp's built-in gemma template instead.
    params.use_jinja = False
    params.chat_template = args.chat_template
    params.n_parallel = 1
    server = xllamacpp.Server(params)

    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    else:
        print("llama.cpp server did not become healthy", file=sys.stderr)
        return 1
    print(f"READY {base}/v1", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    # The server runs in its own threads for as long as `server` is referenced (dropping it stops it).
    while server is not None:
        time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
