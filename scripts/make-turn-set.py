#!/usr/bin/env python3
"""Builds the paused-speech set that measures end-of-turn decisions (`tomo-audio`'s `turn_eval` example).

Every sentence is spoken by three voices (the Piper voice through the project's own TTS, flite, espeak-ng)
with a comma where a speaker might hesitate ("I was thinking, maybe we could go out tonight."); the short
comma pause the voice makes is found by its energy and replaced by digital silence of 300, 500, 700 or
900 ms. The same sentence without the comma is the complete utterance. A faint noise floor (-66 dBFS) is
added throughout, as a real microphone has one.

Writes <out>/<voice>-<n>-paused.wav and <voice>-<n>-complete.wav (16 kHz mono int16) and <out>/set.json:
for each paused file the pause's first and last sample and the end of speech; for each complete file the end
of speech. With --fixtures it also writes a small subset into crates/tomo-audio/tests/fixtures/turn-paused/.

Usage: python3 scripts/make-turn-set.py --out ~/.cache/tomo/turn-set [--fixtures]
Needs numpy, flite, espeak-ng, and the tts_say example built in release
(`cargo build --release -p tomo-speech --example tts_say`) with the Piper voice installed.
"""

import argparse
import json
import os
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np

RATE = 16000
REPO = Path(__file__).resolve().parent.parent
PAUSES_MS = [300, 500, 700, 900]
NOISE_DBFS = -66.0

# The comma marks the hesitation; the part before it is not a finished sentence.
SENTENCES = [
    "I was thinking, maybe we could go out tonight.",
    "The thing is, I don't really know what to do.",
    "Could you remind me, to call my mother tomorrow?",
    "What I would really like, is a cup of tea.",
    "So yesterday I went to the, store and bought some apples.",
    "If it rains tomorrow, we should just stay inside.",
    "My favourite colour is, probably dark blue.",
    "I need to buy, eggs and milk and bread.",
    "Can you tell me about, the history of Rome?",
    "When you have a moment, could you check my calendar?",
    "I wanted to ask you, whether you like music.",
    "The best thing about summer is, the long evenings.",
    "Let me think about, what we should cook for dinner.",
    "I'm not sure if, I locked the front door.",
    "Tomorrow morning I have to, finish my report.",
    "Do you know, how far it is to the station?",
    "My sister and I, are going to visit Paris.",
    "I really hope that, the weather stays nice.",
    "Could you play some, quiet piano music please?",
    "What do you think about, learning to play the guitar?",
]


def read_wav(path: Path):
    with wave.open(str(path), "rb") as w:
        rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    assert width == 2, path
    data = data.reshape(-1, channels).mean(axis=1) / 32768.0
    return data.astype(np.float64), rate


def to_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    if rate == RATE:
        return samples
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.wav", Path(tmp) / "out.wav"
        write_wav(src, samples, rate)
        subprocess.run(["sox", str(src), "-r", str(RATE), str(dst)], check=True)
        out, _ = read_wav(dst)
    return out


def write_wav(path: Path, samples: np.ndarray, rate: int = RATE) -> None:
    pcm = np.clip(np.round(samples * 32767.0), -32768, 32767).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def speak(voice: str, text: str, tts_say: Path) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "speech.wav"
        if voice == "piper":
            done = subprocess.run(
                [str(tts_say), "piper", "en_US-joe-medium", text, str(out)],
                check=True, capture_output=True, text=True,
            )
            # tts_say falls back to a Debian voice when Piper is missing: that would be another voice.
            assert "piper" in done.stderr.lower(), done.stderr
        elif voice == "flite":
            subprocess.run(["flite", "-voice", "slt", "-t", text, "-o", str(out)], check=True)
        else:
            subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(out), text], check=True)
        samples, rate = read_wav(out)
    return to_16k(samples, rate)


def energy(samples: np.ndarray, window: int = 160) -> np.ndarray:
    frames = len(samples) // window
    return np.sqrt((samples[: frames * window].reshape(frames, window) ** 2).mean(axis=1) + 1e-12)


def speech_bounds(samples: np.ndarray, threshold: float):
    loud = np.nonzero(energy(samples) > threshold)[0]
    return loud[0] * 160, (loud[-1] + 1) * 160


def comma_gap(samples: np.ndarray, expected_fraction: float):
    """The comma's pause: (first, last) sample, or None."""
    e = energy(samples)
    threshold = max(e.max() * 0.03, 0.002)
    quiet = e < threshold
    start, end = speech_bounds(samples, threshold)
    gaps, run = [], None
    for i in range(start // 160, end // 160):
        if quiet[i] and run is None:
            run = i
        elif not quiet[i] and run is not None:
            gaps.append((run, i))
            run = None
    # The voices pause longest at the comma; stop closures inside words ("thinking") are shorter. Take the
    # longest quiet stretch of at least 60 ms, a little in favour of the comma's place in the text.
    gaps = [g for g in gaps if g[1] - g[0] >= 6]
    if not gaps:
        return None
    target = start + expected_fraction * (end - start)
    best = max(gaps, key=lambda g: (g[1] - g[0]) * 160 - 0.05 * abs((g[0] + g[1]) * 80 - target))
    return best[0] * 160, best[1] * 160


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path.home() / ".cache/tomo/turn-set")
    parser.add_argument("--fixtures", action="store_true")
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    parser.add_argument("--tts-say", type=Path, default=target / "release/examples/tts_say")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(11)
    noise_rms = 10 ** (NOISE_DBFS / 20)
    entries, skipped = [], []
    for voice in ["piper", "flite", "espeak"]:
        for n, sentence in enumerate(SENTENCES):
            pause_ms = PAUSES_MS[(n + len(voice)) % len(PAUSES_MS)]
            paused = speak(voice, sentence, args.tts_say)
            gap = comma_gap(paused, sentence.index(",") / len(sentence))
            if gap is None:
                skipped.append(f"{voice}-{n}: no pause found at the comma")
                continue
            head, tail = paused[: gap[0]], paused[gap[1]:]
            pause = np.zeros(int(RATE * pause_ms / 1000))
            lead = np.zeros(int(RATE * 0.3))
            paused_audio = np.concatenate([lead, head, pause, tail])
            pause_start = len(lead) + len(head)
            complete = speak(voice, sentence.replace(",", ""), args.tts_say)
            complete_audio = np.concatenate([lead, complete])
            for kind, audio, extra in [
                ("paused", paused_audio, {"pause_start": pause_start, "pause_end": pause_start + len(pause), "pause_ms": pause_ms}),
                ("complete", complete_audio, {}),
            ]:
                _, speech_end = speech_bounds(audio, 0.002)
                noisy = audio + rng.normal(0.0, noise_rms, len(audio))
                name = f"{voice}-{n:02}-{kind}.wav"
                write_wav(args.out / name, noisy)
                entries.append({"file": name, "voice": voice, "kind": kind, "text": sentence,
                                "speech_end": int(speech_end), **extra})
    (args.out / "set.json").write_text(json.dumps({"made_by": "scripts/make-turn-set.py", "recordings": entries}, indent=1) + "\n")
    print(f"{len(entries)} recordings in {args.out}")
    for line in skipped:
        print("skipped:", line)
    if args.fixtures:
        fixture = REPO / "crates/tomo-audio/tests/fixtures/turn-paused"
        fixture.mkdir(parents=True, exist_ok=True)
        chosen = [e for e in entries if e["voice"] == "piper" and e["file"].split("-")[1] in ("00", "04", "06")]
        for e in chosen:
            (fixture / e["file"]).write_bytes((args.out / e["file"]).read_bytes())
        (fixture / "set.json").write_text(json.dumps({"made_by": "scripts/make-turn-set.py --fixtures", "recordings": chosen}, indent=1) + "\n")
        print(f"{len(chosen)} recordings in {fixture}")


if __name__ == "__main__":
    main()
