//! The sink's ordering, drain and interrupt logic with scripted parts: a TTS whose synthesis time is
//! chosen per sentence and an output that "plays" each clip for its real duration on a timer.
//! (Real TTS and real devices are exercised by the crate's integration tests and `tomo talk`.)

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::sync::{mpsc, watch};
use tomo_audio::Audio;
use tomo_audio::output::{AudioOutput, Clip, OutputError};
use tomo_core::sink::{OutputSink, SinkError, SinkEvents};
use tomo_protocol::{Event, Sentence};

use super::{VoiceSink, envelope};
use crate::tts::{TextToSpeech, TtsError};

/// "Speaks" text as a tone whose length encodes the text length; sentences containing "slow" take
/// longer to synthesize than the ones after them.
struct ScriptedTts;

impl TextToSpeech for ScriptedTts {
    fn name(&self) -> &str {
        "scripted"
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        if text.contains("slow") {
            std::thread::sleep(Duration::from_millis(150));
        }
        if text.contains("broken") {
            return Err(TtsError::Failed("scripted failure".into()));
        }
        let rate = 8000;
        let samples = (0..rate / 10)
            .map(|i| ((i as f32) * 0.05).sin() * 0.5)
            .collect();
        Ok(Audio::new(samples, rate))
    }
}

/// (what happened, clip number, when)
type PlayLog = Arc<Mutex<Vec<(&'static str, usize, Instant)>>>;

/// Plays clips one after another on a timer, recording (text-free) start/end instants per clip.
struct TimedOutput {
    log: PlayLog,
    count: Mutex<usize>,
    tx: mpsc::UnboundedSender<(usize, Clip)>,
    busy: watch::Receiver<usize>,
    stop: watch::Sender<u64>,
}

impl TimedOutput {
    fn new() -> Arc<Self> {
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Clip)>();
        let (busy_tx, busy) = watch::channel(0usize);
        let (stop, mut stopped) = watch::channel(0u64);
        let log: PlayLog = Arc::default();
        let player_log = Arc::clone(&log);
        tokio::spawn(async move {
            while let Some((n, mut clip)) = rx.recv().await {
                let generation = *stopped.borrow_and_update();
                if let Some(start) = clip.on_start.take() {
                    start();
                }
                player_log
                    .lock()
                    .unwrap()
                    .push(("start", n, Instant::now()));
                let length = Duration::from_secs_f64(clip.audio.duration_secs());
                tokio::select! {
                    _ = tokio::time::sleep(length) => {
                        player_log.lock().unwrap().push(("end", n, Instant::now()));
                        if let Some(finish) = clip.on_finish.take() { finish(); }
                    }
                    _ = stopped.changed() => {}
                }
                if *stopped.borrow() != generation {
                    while rx.try_recv().is_ok() {
                        player_log
                            .lock()
                            .unwrap()
                            .push(("dropped", 0, Instant::now()));
                    }
                    player_log
                        .lock()
                        .unwrap()
                        .push(("dropped", n, Instant::now()));
                }
                busy_tx.send_modify(|b| *b = b.saturating_sub(1));
            }
        });
        Arc::new(Self {
            log,
            count: Mutex::new(0),
            tx,
            busy,
            stop,
        })
    }
}

impl AudioOutput for TimedOutput {
    fn play(&self, clip: Clip) -> Result<(), OutputError> {
        let mut count = self.count.lock().unwrap();
        *count += 1;
        let n = *count;
        self.tx
            .send((n, clip))
            .map_err(|_| OutputError::Device("closed".into()))?;
        Ok(())
    }

    fn drained(&self) -> BoxFuture<'static, ()> {
        let mut busy = self.busy.clone();
        let queued = *self.count.lock().unwrap();
        let log = Arc::clone(&self.log);
        Box::pin(async move {
            loop {
                let ended = log
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|e| e.0 != "start")
                    .count();
                if ended >= queued || busy.changed().await.is_err() {
                    return;
                }
            }
        })
    }

    fn stop(&self) {
        self.stop.send_modify(|g| *g += 1);
    }
}

fn sentence(index: u32, text: &str) -> Sentence {
    Sentence {
        index,
        display_text: text.into(),
        tts_text: Some(text.into()),
        actions: vec![],
        display_spans: vec![],
    }
}

fn collect(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<Event> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

#[tokio::test]
async fn clips_play_in_sentence_order_even_when_synthesis_finishes_out_of_order() {
    let output = TimedOutput::new();
    let sink = VoiceSink::new(Arc::new(ScriptedTts), output.clone(), 3);
    let (tx, mut rx) = mpsc::unbounded_channel();
    sink.attach(SinkEvents::new(tx));
    sink.enqueue(7, sentence(0, "slow first sentence")).unwrap();
    sink.enqueue(7, sentence(1, "quick second")).unwrap();
    sink.enqueue(7, sentence(2, "quick third")).unwrap();
    let started = Instant::now();
    sink.finish_turn(7).await.unwrap();
    // Three 100 ms clips played back to back: drained cannot come before their total duration.
    assert!(started.elapsed() >= Duration::from_millis(300));
    let order: Vec<u32> = collect(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            Event::AudioStarted {
                sentence_index,
                envelope,
                frame_ms,
                ..
            } => {
                assert_eq!(frame_ms, 20);
                assert!(envelope.iter().any(|v| (*v - 1.0).abs() < 1e-6));
                Some(sentence_index)
            }
            _ => None,
        })
        .collect();
    assert_eq!(order, vec![0, 1, 2]);
    assert!(sink.first_audio_at(7).is_some());
}

#[tokio::test]
async fn silent_and_failed_sentences_are_skipped_without_stopping_the_turn() {
    let output = TimedOutput::new();
    let sink = VoiceSink::new(Arc::new(ScriptedTts), output.clone(), 2);
    let (tx, mut rx) = mpsc::unbounded_channel();
    sink.attach(SinkEvents::new(tx));
    let mut display_only = sentence(0, "🎉");
    display_only.tts_text = None;
    sink.enqueue(1, display_only).unwrap();
    sink.enqueue(1, sentence(1, "broken one")).unwrap();
    sink.enqueue(1, sentence(2, "fine")).unwrap();
    sink.finish_turn(1).await.unwrap();
    let finished: Vec<u32> = collect(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            Event::AudioFinished { sentence_index, .. } => Some(sentence_index),
            _ => None,
        })
        .collect();
    assert_eq!(finished, vec![2]);
}

#[tokio::test]
async fn interrupt_drops_queued_sentences_and_reports_interrupted() {
    let output = TimedOutput::new();
    let sink = VoiceSink::new(Arc::new(ScriptedTts), output.clone(), 1);
    let (tx, mut rx) = mpsc::unbounded_channel();
    sink.attach(SinkEvents::new(tx));
    for i in 0..5 {
        sink.enqueue(3, sentence(i, "a sentence")).unwrap();
    }
    let drained = sink.finish_turn(3);
    tokio::time::sleep(Duration::from_millis(120)).await;
    sink.interrupt();
    let outcome = tokio::time::timeout(Duration::from_secs(2), drained)
        .await
        .unwrap();
    assert_eq!(outcome, Err(SinkError::Interrupted));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = collect(&mut rx)
        .iter()
        .filter(|e| matches!(e, Event::AudioStarted { .. }))
        .count();
    assert!(
        started < 5,
        "queued sentences were dropped, {started} started"
    );

    // The sink keeps working for the next turn.
    sink.enqueue(4, sentence(0, "next turn")).unwrap();
    sink.finish_turn(4).await.unwrap();
}

/// Records every text it synthesizes; each clip's length says which text it was (10 ms per character).
#[derive(Default)]
struct CountingTts {
    said: Mutex<Vec<String>>,
}

impl TextToSpeech for CountingTts {
    fn name(&self) -> &str {
        "counting"
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        self.said.lock().unwrap().push(text.to_owned());
        Ok(Audio::new(vec![0.1; 80 * text.len()], 8000))
    }
}

/// The lengths (ms) of the clips that started playing.
fn played_ms(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<u32> {
    collect(rx)
        .into_iter()
        .filter_map(|e| match e {
            Event::AudioStarted { envelope, .. } => Some(envelope.len() as u32 * 20),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_prepared_first_sentence_is_synthesized_once_and_a_wrong_guess_is_dropped() {
    let tts = Arc::new(CountingTts::default());
    let sink = VoiceSink::new(tts.clone(), TimedOutput::new(), 2);
    let (tx, mut rx) = mpsc::unbounded_channel();
    sink.attach(SinkEvents::new(tx));

    sink.prepare(1, "Of course!");
    sink.enqueue(1, sentence(0, "Of course!")).unwrap();
    sink.finish_turn(1).await.unwrap();
    assert_eq!(*tts.said.lock().unwrap(), ["Of course!"]);
    assert_eq!(played_ms(&mut rx), [100]);

    // The guess was wrong ("Really?!"): the sentence as enqueued is spoken, not the guess.
    sink.prepare(2, "Really?");
    sink.enqueue(2, sentence(0, "Really?!")).unwrap();
    sink.finish_turn(2).await.unwrap();
    assert_eq!(played_ms(&mut rx), [80]);
    // A guess for another turn, or one made before an interrupt, is not used either.
    sink.prepare(2, "Hi there.");
    sink.enqueue(3, sentence(0, "Hi there.")).unwrap();
    sink.finish_turn(3).await.unwrap();
    sink.prepare(4, "Hi there.");
    sink.interrupt();
    sink.enqueue(4, sentence(0, "Hi there.")).unwrap();
    sink.finish_turn(4).await.unwrap();
    // Guesses dropped before a worker took them up were never synthesized (this runtime runs the
    // synthesis tasks only when the test awaits, so each guess here was dropped first).
    assert_eq!(
        *tts.said.lock().unwrap(),
        ["Of course!", "Really?!", "Hi there.", "Hi there."]
    );
}

/// Records which voice spoke which text.
struct NamedTts {
    name: String,
    spoken: Arc<Mutex<Vec<(String, String)>>>,
}

impl TextToSpeech for NamedTts {
    fn name(&self) -> &str {
        &self.name
    }

    fn synthesize(&self, text: &str) -> Result<Audio, TtsError> {
        self.spoken
            .lock()
            .unwrap()
            .push((self.name.clone(), text.to_owned()));
        Ok(Audio::new(vec![0.1; 400], 8000))
    }
}

fn profile_with_voice(voice: &str) -> tomo_config::profile::Profile {
    let text = format!(
        "[character]\nname = \"T\"\nagent_id = \"t\"\npersona = \"p\"\n\
         [llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n[tts]\nvoice = \"{voice}\"\n"
    );
    tomo_config::profile::parse_profile(&text, std::path::Path::new("t.toml"))
        .unwrap()
        .profile
}

#[tokio::test]
async fn a_character_switch_changes_the_voice_of_the_next_sentences_and_a_broken_voice_keeps_the_old()
 {
    let spoken: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let first = NamedTts {
        name: "first".into(),
        spoken: Arc::clone(&spoken),
    };
    let log = Arc::clone(&spoken);
    let build: super::VoiceBuilder = Arc::new(move |profile| {
        if profile.tts.voice == "missing" {
            return Err("voice `missing` is not installed".to_owned());
        }
        Ok(Arc::new(NamedTts {
            name: profile.tts.voice.clone(),
            spoken: Arc::clone(&log),
        }) as Arc<dyn TextToSpeech>)
    });
    let sink = VoiceSink::new(Arc::new(first), TimedOutput::new(), 2).with_voices(build);

    sink.enqueue(1, sentence(0, "hello")).unwrap();
    sink.finish_turn(1).await.unwrap();
    sink.switch_voice(&profile_with_voice("second"))
        .await
        .unwrap();
    assert_eq!(sink.tts_name(), "second");
    sink.enqueue(2, sentence(0, "hi again")).unwrap();
    sink.finish_turn(2).await.unwrap();

    let refused = sink.switch_voice(&profile_with_voice("missing")).await;
    assert!(
        matches!(&refused, Err(SinkError::Voice(m)) if m.contains("missing")),
        "{refused:?}"
    );
    sink.enqueue(3, sentence(0, "still me")).unwrap();
    sink.finish_turn(3).await.unwrap();

    let said = spoken.lock().unwrap().clone();
    let pairs: Vec<(&str, &str)> = said.iter().map(|(v, t)| (v.as_str(), t.as_str())).collect();
    assert_eq!(
        pairs,
        [
            ("first", "hello"),
            ("second", "hi again"),
            ("second", "still me")
        ]
    );
}

#[tokio::test]
async fn without_a_voice_builder_a_switch_keeps_the_voice() {
    let sink = VoiceSink::new(Arc::new(ScriptedTts), TimedOutput::new(), 1);
    sink.switch_voice(&profile_with_voice("other"))
        .await
        .unwrap();
    assert_eq!(sink.tts_name(), "scripted");
}

#[test]
fn envelope_is_normalised_rms_per_frame() {
    let rate = 1000;
    let mut samples = vec![0.0; 20];
    samples.extend(vec![0.5; 20]);
    samples.extend(vec![-0.25; 20]);
    let env = envelope(&Audio::new(samples, rate), 20);
    assert_eq!(env, vec![0.0, 1.0, 0.5]);
    assert_eq!(
        envelope(&Audio::new(vec![0.0; 40], rate), 20),
        vec![0.0, 0.0]
    );
}
