//! A capture device that disappears while running: reported as `Lost`, reopened when it is back.
//!
//! The test kills a *private* PulseAudio daemon (its own runtime directory), never the shared one. Its
//! environment must be set before any audio library connects, so the parent test re-runs this test
//! binary as a child process with that environment; the child does the capturing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tomo_audio::output::{AudioOutput, Clip, OutputError};
use tomo_audio::{Audio, Capture, CaptureConfig, CaptureStatus, RodioOutput};

const CHILD_ENV: &str = "TOMO_AUDIO_PRIVATE_PULSE";

fn daemon(dir: &Path, args: &[&str]) -> bool {
    Command::new("pulseaudio")
        .args(args)
        .env("PULSE_RUNTIME_PATH", dir)
        .env("PULSE_STATE_PATH", dir)
        .status()
        .is_ok_and(|s| s.success())
}

fn start_daemon(dir: &Path) -> bool {
    let started = daemon(
        dir,
        &[
            "-D",
            "--exit-idle-time=-1",
            "-n",
            "--load=module-null-sink sink_name=lostsink",
            "--load=module-native-protocol-unix",
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while started && !dir.join("native").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    started
}

fn kill_daemon(dir: &Path) {
    daemon(dir, &["--kill"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while daemon(dir, &["--check"]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn capture_reports_a_lost_device_and_reopens_it() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // we are the child: the work happens in `child_capture_across_a_restart`
    }
    if Command::new("pulseaudio")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skip_or_fail("pulseaudio is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_capture_across_a_restart", "--nocapture"])
        .env(CHILD_ENV, dir.path())
        .env("PULSE_RUNTIME_PATH", dir.path())
        .env("PULSE_STATE_PATH", dir.path())
        .env(
            "PULSE_SERVER",
            format!("unix:{}/native", dir.path().display()),
        )
        .output()
        .unwrap();
    kill_daemon(dir.path()); // in case the child failed half-way
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "child failed:\n{text}");
    assert!(text.contains("1 passed"), "child did not run:\n{text}");
}

#[test]
fn child_capture_across_a_restart() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    assert!(start_daemon(dir), "cannot start the private PulseAudio");

    let (capture, streams) = Capture::spawn(CaptureConfig {
        retry_interval: Duration::from_millis(300),
        ..CaptureConfig::default()
    })
    .unwrap();
    capture.start().unwrap();
    let status = streams.status.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        matches!(status, CaptureStatus::Started { .. }),
        "{status:?}"
    );
    streams
        .frames
        .recv_timeout(Duration::from_secs(10))
        .unwrap();

    let speakers = RodioOutput::open(None).unwrap();
    let tone = || Clip {
        audio: Audio::new(common::tone(440.0, 24000, 1.0), 24000),
        on_start: None,
        on_finish: None,
    };
    speakers.play(tone()).unwrap();
    futures::executor::block_on(speakers.drained());

    eprintln!("child: capturing, killing the daemon");
    kill_daemon(dir);
    // Playback on the dead server: drained() still resolves, and clips end up refused (at once if
    // the device already reported the error, else after the stall check notices it).
    let deadline = Instant::now() + Duration::from_secs(20);
    let refused = loop {
        match speakers.play(tone()) {
            Ok(()) => futures::executor::block_on(speakers.drained()),
            Err(error) => break error,
        }
        assert!(
            Instant::now() < deadline,
            "playback never noticed the dead server"
        );
    };
    assert!(matches!(refused, OutputError::Device(_)), "{refused:?}");
    eprintln!("child: playback reported the dead device: {refused:?}");
    let status = streams
        .status
        .recv_timeout(Duration::from_secs(10))
        .unwrap();
    eprintln!("child: {status:?}");
    assert!(matches!(status, CaptureStatus::Lost(_)), "{status:?}");

    // While the device is gone the retries fail quietly; when it is back, capture resumes.
    std::thread::sleep(Duration::from_secs(1));
    assert!(start_daemon(dir), "cannot restart the private PulseAudio");
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut restored = false;
    while !restored && Instant::now() < deadline {
        match streams.status.recv_timeout(Duration::from_millis(500)) {
            Ok(CaptureStatus::Restored(_)) => restored = true,
            Ok(CaptureStatus::Started { .. }) => {} // the reopen announces the new stream first
            Ok(other) => panic!("unexpected status {other:?}"),
            Err(_) => {}
        }
    }
    assert!(restored, "capture was not restored");
    eprintln!("child: restored");

    // Speech comes back too: the next clips reopen the output device on the restarted server.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match speakers.play(tone()) {
            Ok(()) => break,
            Err(error) => {
                assert!(Instant::now() < deadline, "output not reopened: {error:?}");
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
    let started = Instant::now();
    futures::executor::block_on(speakers.drained());
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "the reopened device did not play the 1 s tone (drained after {:?})",
        started.elapsed()
    );
    eprintln!("child: output reopened and played");
    while streams.frames.try_recv().is_ok() {}
    streams
        .frames
        .recv_timeout(Duration::from_secs(10))
        .unwrap();
    capture.shutdown();
    kill_daemon(dir);
}
