//! The voice front end: microphone → VAD segmenter → `speech_started` ops, and utterances → ASR on its own
//! thread → `speech_ended` ops. Half-duplex by default: while the character speaks the microphone is
//! ignored, so it does not answer its own voice coming out of the speakers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use tokio::sync::mpsc;
use tomo_audio::{
    Capture, CaptureConfig, CaptureError, CaptureStatus, CaptureStreams, ListenMode, Segmenter,
    SegmenterEvent, SileroVad,
};
use tomo_protocol::{Event, Op, SessionState};
use tomo_speech::asr::SpeechToText;

use crate::notices::{Notice, Notify};
use crate::voice;

/// Shared switches the front end reads on every frame.
#[derive(Debug, Clone, Default)]
pub struct ListenFlags {
    /// The character is speaking (set from `state_changed` events).
    pub speaking: Arc<AtomicBool>,
    /// The user muted the microphone (set from `mode_changed` events: the session owns the mute state).
    pub muted: Arc<AtomicBool>,
    /// Keep listening while the character speaks (headsets).
    pub barge_in: bool,
    /// Listen only while push-to-talk is held (from `mode_changed`).
    pub push_to_talk: Arc<AtomicBool>,
    /// Push-to-talk is held right now (from `push_to_talk` events).
    pub ptt_pressed: Arc<AtomicBool>,
}

impl ListenFlags {
    /// Keeps the switches in step with the session: call it with every session event.
    pub fn follow(&self, event: &Event) {
        match event {
            Event::StateChanged { to, .. } => {
                self.speaking
                    .store(*to == SessionState::Speaking, Ordering::SeqCst);
            }
            Event::ModeChanged {
                mic_muted,
                push_to_talk,
                ..
            } => {
                self.muted.store(*mic_muted, Ordering::SeqCst);
                self.push_to_talk.store(*push_to_talk, Ordering::SeqCst);
                if !*push_to_talk {
                    self.ptt_pressed.store(false, Ordering::SeqCst);
                }
            }
            Event::PushToTalk { pressed } => self.ptt_pressed.store(*pressed, Ordering::SeqCst),
            _ => {}
        }
    }

    /// How the segmenter should listen now, and whether push-to-talk is held (in that mode). While the
    /// character speaks the microphone is off (it would hear itself) unless the user uses a headset
    /// (`barge_in`) or deliberately holds push-to-talk, which interrupts the answer.
    pub fn wanted(&self) -> (ListenMode, bool) {
        let ptt = self.push_to_talk.load(Ordering::SeqCst);
        let pressed = ptt && self.ptt_pressed.load(Ordering::SeqCst);
        let speaking = self.speaking.load(Ordering::SeqCst) && !self.barge_in;
        if self.muted.load(Ordering::SeqCst) || (speaking && !ptt) {
            (ListenMode::Muted, false)
        } else if ptt {
            (ListenMode::PushToTalk, pressed)
        } else {
            (ListenMode::HandsFree, false)
        }
    }
}

/// Opens the microphone (`device`, or the default) and starts the capture, VAD and ASR threads, which
/// run until the session's op channel closes. Returns the device name.
pub fn start_listening(
    device: Option<String>,
    vad: SileroVad,
    asr: Arc<dyn SpeechToText>,
    ops: mpsc::Sender<Op>,
    flags: ListenFlags,
    notify: Notify,
) -> Result<String, CaptureError> {
    let (capture, streams) = Capture::spawn(CaptureConfig {
        device,
        ..CaptureConfig::default()
    })?;
    let name = capture.start()?;
    let mut segmenter = Segmenter::new(vad, &voice::segmenter_config());
    let (segments_tx, segments_rx) = std::sync::mpsc::sync_channel(4);
    spawn_asr(asr, segments_rx, ops.clone(), Arc::clone(&notify));
    thread::spawn(move || {
        let _capture = capture; // keep the device open as long as this thread runs
        listen(
            &mut segmenter,
            &streams,
            &ops,
            &flags,
            &segments_tx,
            &*notify,
        );
    });
    Ok(name)
}

/// The capture side: frames → VAD segmenter → `speech_started` ops and segments for ASR.
fn listen(
    segmenter: &mut Segmenter<SileroVad>,
    streams: &CaptureStreams,
    ops: &mpsc::Sender<Op>,
    flags: &ListenFlags,
    segments: &std::sync::mpsc::SyncSender<Vec<f32>>,
    notify: &(dyn Fn(Notice) + Send + Sync),
) {
    loop {
        while let Ok(status) = streams.status.try_recv() {
            match status {
                CaptureStatus::Lost(why) => notify(Notice::warning(format!(
                    "microphone lost ({why}); retrying"
                ))),
                CaptureStatus::Restored(device) => {
                    notify(Notice::info(format!("microphone back: {device}")))
                }
                _ => {}
            }
        }
        let Ok(frame) = streams.frames.recv() else {
            return; // capture thread gone
        };
        if ops.is_closed() {
            return; // session over
        }
        let (wanted, pressed) = flags.wanted();
        let mut events = Vec::new();
        if segmenter.mode() != wanted {
            events.extend(segmenter.set_mode(wanted));
        }
        if wanted == ListenMode::PushToTalk && pressed != segmenter.is_pressed() {
            events.extend(if pressed {
                segmenter.press()
            } else {
                segmenter.release()
            });
        }
        match segmenter.push(&frame) {
            Ok(more) => events.extend(more),
            Err(error) => {
                notify(Notice::warning(format!("voice detection failed: {error}")));
                continue;
            }
        }
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
    notify: Notify,
) {
    thread::spawn(move || {
        while let Ok(samples) = segments.recv() {
            let started = std::time::Instant::now();
            let transcript = match asr.transcribe(&samples) {
                Ok(transcript) => transcript.text,
                Err(error) => {
                    notify(Notice::warning(format!(
                        "speech recognition failed: {error}"
                    )));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switches_follow_the_sessions_state_and_mute() {
        let flags = ListenFlags::default();
        flags.follow(&Event::StateChanged {
            from: SessionState::Thinking,
            to: SessionState::Speaking,
        });
        assert!(flags.speaking.load(Ordering::SeqCst));
        flags.follow(&Event::ModeChanged {
            mic_muted: true,
            do_not_disturb: false,
            push_to_talk: false,
        });
        assert!(flags.muted.load(Ordering::SeqCst));
        flags.follow(&Event::StateChanged {
            from: SessionState::Speaking,
            to: SessionState::Idle,
        });
        flags.follow(&Event::ModeChanged {
            mic_muted: false,
            do_not_disturb: true,
            push_to_talk: false,
        });
        assert!(!flags.speaking.load(Ordering::SeqCst));
        assert!(!flags.muted.load(Ordering::SeqCst));
    }

    fn mode(flags: &ListenFlags, muted: bool, push_to_talk: bool) {
        flags.follow(&Event::ModeChanged {
            mic_muted: muted,
            do_not_disturb: false,
            push_to_talk,
        });
    }

    fn speaking(flags: &ListenFlags, on: bool) {
        let to = if on {
            SessionState::Speaking
        } else {
            SessionState::Idle
        };
        flags.follow(&Event::StateChanged {
            from: SessionState::Thinking,
            to,
        });
    }

    #[test]
    fn push_to_talk_listens_only_while_held_and_may_interrupt_the_character() {
        let flags = ListenFlags::default();
        assert_eq!(flags.wanted(), (ListenMode::HandsFree, false));
        speaking(&flags, true);
        assert_eq!(flags.wanted(), (ListenMode::Muted, false), "half-duplex");
        mode(&flags, false, true);
        assert_eq!(flags.wanted(), (ListenMode::PushToTalk, false));
        flags.follow(&Event::PushToTalk { pressed: true });
        assert_eq!(
            flags.wanted(),
            (ListenMode::PushToTalk, true),
            "held while it speaks"
        );
        speaking(&flags, false);
        flags.follow(&Event::PushToTalk { pressed: false });
        assert_eq!(flags.wanted(), (ListenMode::PushToTalk, false));
        flags.follow(&Event::PushToTalk { pressed: true });
        mode(&flags, true, true);
        assert_eq!(flags.wanted(), (ListenMode::Muted, false), "mute wins");
        mode(&flags, false, false);
        assert_eq!(flags.wanted(), (ListenMode::HandsFree, false));
        assert!(
            !flags.ptt_pressed.load(Ordering::SeqCst),
            "leaving the mode releases"
        );
    }
}
