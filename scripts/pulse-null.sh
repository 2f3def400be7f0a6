#!/usr/bin/env bash
# Starts a PulseAudio daemon with a null sink for audio tests on headless machines (CI, containers):
# ALSA's default device routes to it, audio played to `nullsink` can be captured back from
# `nullsink.monitor` (a real loopback). Idempotent: does nothing but set the defaults when a daemon
# already answers. Usage: scripts/pulse-null.sh
set -euo pipefail

if ! command -v pulseaudio >/dev/null 2>&1; then
    echo "error: pulseaudio is not installed (apt-get install pulseaudio pulseaudio-utils libasound2-plugins)" >&2
    exit 1
fi

if ! pactl info >/dev/null 2>&1; then
    # -n: no default.pa (no hardware probing); the null sink and the native socket are all we need.
    # --exit-idle-time=-1: stay up between tests. Running as root needs no --system in a container.
    pulseaudio -D --exit-idle-time=-1 -n \
        --load="module-null-sink sink_name=nullsink" \
        --load=module-native-protocol-unix
    for _ in $(seq 1 50); do
        pactl info >/dev/null 2>&1 && break
        sleep 0.1
    done
fi

if ! pactl list short sinks 2>/dev/null | grep -q nullsink; then
    pactl load-module module-null-sink sink_name=nullsink >/dev/null
fi
# The loopback only works when the defaults point at the null sink and its monitor.
pactl set-default-sink nullsink
pactl set-default-source nullsink.monitor
pactl info | grep -E "Default (Sink|Source)"
