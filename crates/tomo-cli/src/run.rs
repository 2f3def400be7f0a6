//! `tomo run`: talk to a character through the microphone and hear it through the speakers. Typed lines
//! still work. Without a microphone it is a text chat with voice; without speakers, a voice chat with text.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use anyhow::Context;
use clap::Args;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tomo_audio::{
    Capture, CaptureConfig, CaptureStatus, ListenMode, RodioOutput, Segmenter, SegmenterEvent,
};
use tomo_core::protocol::{Event, Op, SessionState};
use tomo_core::session::start_session;
use tomo_core::sink::{OutputSink, TextSink};
use tomo_speech::asr::SpeechToText;
use tomo_speech::models::{InstallOptions, ModelStore};
use tomo_speech::voice_sink::VoiceSink;

use crate::LlmFlags;
use crate::render::Renderer;
use crate::session_env::{SessionFlags, environment, load_profile_or_report};
use crate::{models_cmd, voice};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The character profile (profiles/*.toml).
    #[arg(long, short)]
    pub profile: PathBuf,
    /// Keep listening while the character speaks (for headsets: with speakers it would hear itself).
    #[arg(long)]
    pub barge_in: bool,
    /// Print every event as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Sentences synthesized at the same time, ahead of playback.
    #[arg(long, default_value_t = 2)]
    pub tts_workers: usize,
    #[command(flatten)]
    pub llm: LlmFlags,
    #[command(flatten)]
    pub session: SessionFlags,
}

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let Some(profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::from(2));
    };
    let store = ModelStore::from_env()?;
    let missing = voice::missing_models(&store, &profile)?;
    if !missing.is_empty() {
        eprintln!(
            "* first run: installing {} into {}",
            missing.join(", "),
            store.root.display()
        );
        let install_store = store.clone();
        tokio::task::spawn_blocking(move || {
            models_cmd::install(&install_store, &missing, &InstallOptions::default())
        })
        .await??;
    }

    let sink: Arc<dyn OutputSink> = match RodioOutput::open(profile.tts.output_device.as_deref()) {
        Ok(output) => Arc::new(
            VoiceSink::new(
                voice::tts(&profile, &store)?,
                Arc::new(output),
                args.tts_workers,
            )
            .with_voices(voice::voice_builder(&store)),
        ),
        Err(error) => {
            eprintln!("! no speakers ({error}); answers are shown as text only");
            Arc::new(TextSink)
        }
    };
    let asr = voice::asr(&profile, &store)?;
    let vad = voice::vad(&store)?;
    let input_device = profile.asr.input_device.clone();
    let prepared = environment(&args.profile, &args.llm, &args.session);
    let (session, mut events) = start_session(profile, prepared.env.clone(), sink)
        .await
        .context("cannot start the session")?;
    let ops = session.sender();

    // Half-duplex by default: while the character speaks, the microphone is ignored so it does not
    // answer its own voice coming out of the speakers.
    let speaking = Arc::new(AtomicBool::new(false));
    let listening = match Capture::spawn(CaptureConfig {
        device: input_device,
        ..CaptureConfig::default()
    }) {
        Ok((capture, streams)) => match capture.start() {
            Ok(device) => {
                eprintln!("* listening on {device}");
                let mut segmenter = Segmenter::new(vad, &voice::segmenter_config());
                let (ops, speaking, barge_in) = (ops.clone(), Arc::clone(&speaking), args.barge_in);
                let (segments_tx, segments_rx) = std::sync::mpsc::sync_channel(4);
                spawn_asr(asr, segments_rx, ops.clone());
                thread::spawn(move || {
                    let _capture = capture; // keep the device open as long as this thread runs
                    listen(
                        &mut segmenter,
                        &streams,
                        &ops,
                        &speaking,
                        barge_in,
                        &segments_tx,
                    );
                });
                true
            }
            Err(error) => {
                eprintln!("! no microphone ({error}); type your messages");
                false
            }
        },
        Err(error) => {
            eprintln!("! no microphone ({error}); type your messages");
            false
        }
    };
    if listening {
        eprintln!("Speak, or type a message. Ctrl-C interrupts an answer, Ctrl-D quits.");
    } else {
        eprintln!("Type a message. Ctrl-C interrupts an answer, Ctrl-D quits.");
    }

    let mut renderer = Renderer::new(args.json);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdin_open = true;
    loop {
        tokio::select! {
            envelope = events.recv() => {
                let Some(envelope) = envelope else { break };
                renderer.show(&envelope);
                if let Event::StateChanged { to, .. } = envelope.event {
                    speaking.store(to == SessionState::Speaking, Ordering::SeqCst);
                }
            }
            line = lines.next_line(), if stdin_open => match line {
                Ok(Some(line)) if !line.trim().is_empty() => {
                    ops.send(Op::UserText { text: line.trim().to_owned() }).await.ok();
                }
                Ok(Some(_)) => {}
                // Ctrl-D (or no terminal): keep running on voice if we listen, else quit.
                Ok(None) | Err(_) if listening => stdin_open = false,
                Ok(None) | Err(_) => break,
            },
            _ = tokio::signal::ctrl_c() => {
                ops.send(Op::Interrupt).await.ok();
                if !speaking.load(Ordering::SeqCst) {
                    break;
                }
            }
        }
    }
    ops.send(Op::Shutdown).await.ok();
    session.join().await;
    prepared.settle().await;
    Ok(ExitCode::SUCCESS)
}

/// The capture side: frames → VAD segmenter → `speech_started` ops and segments for ASR.
fn listen(
    segmenter: &mut Segmenter<tomo_audio::SileroVad>,
    streams: &tomo_audio::CaptureStreams,
    ops: &mpsc::Sender<Op>,
    speaking: &AtomicBool,
    barge_in: bool,
    segments: &std::sync::mpsc::SyncSender<Vec<f32>>,
) {
    loop {
        while let Ok(status) = streams.status.try_recv() {
            match status {
                CaptureStatus::Lost(why) => eprintln!("! microphone lost ({why}); retrying"),
                CaptureStatus::Restored(device) => eprintln!("* microphone back: {device}"),
                _ => {}
            }
        }
        let Ok(frame) = streams.frames.recv() else {
            return; // capture thread gone
        };
        let wanted = if speaking.load(Ordering::SeqCst) && !barge_in {
            ListenMode::Muted
        } else {
            ListenMode::HandsFree
        };
        if segmenter.mode() != wanted {
            segmenter.set_mode(wanted);
        }
        let events = match segmenter.push(&frame) {
            Ok(events) => events,
            Err(error) => {
                eprintln!("! voice detection failed: {error}");
                continue;
            }
        };
        for event in events {
            match event {
                SegmenterEvent::SpeechStarted { .. } => {
                    let _ = ops.blocking_send(Op::SpeechStarted);
                }
                SegmenterEvent::Segment(segment) => {
                    // Full queue: the recognizer is far behind; dropping the utterance beats stalling capture.
                    if segments.try_send(segment.samples).is_err() {
                        tracing::warn!("speech recognizer busy; an utterance was dropped");
                    }
                }
                SegmenterEvent::SpeechEnded { .. } => {}
            }
        }
    }
}

/// Recognizes utterances on its own thread, so capture never waits for ASR.
fn spawn_asr(
    asr: Arc<dyn SpeechToText>,
    segments: std::sync::mpsc::Receiver<Vec<f32>>,
    ops: mpsc::Sender<Op>,
) {
    thread::spawn(move || {
        while let Ok(samples) = segments.recv() {
            let started = std::time::Instant::now();
            let transcript = match asr.transcribe(&samples) {
                Ok(transcript) => transcript.text,
                Err(error) => {
                    eprintln!("! speech recognition failed: {error}");
                    String::new()
                }
            };
            let op = Op::SpeechEnded {
                transcript,
                asr_ms: started.elapsed().as_millis() as u64,
            };
            if ops.blocking_send(op).is_err() {
                return;
            }
        }
    });
}
