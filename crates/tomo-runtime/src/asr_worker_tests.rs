//! The recognizer thread: pause transcripts reused, stale ones given up, the pause's words kept for the
//! end of the turn.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use std::sync::Mutex;
use tomo_audio::TurnEnd;
use tomo_speech::asr::Transcript;

/// Says how many samples it was given; records every call.
#[derive(Default)]
struct Counting(Mutex<Vec<usize>>);

impl SpeechToText for Counting {
    fn name(&self) -> &str {
        "counting"
    }

    fn transcribe(&self, samples: &[f32]) -> Result<Transcript, AsrError> {
        self.0.lock().unwrap().push(samples.len());
        Ok(Transcript {
            text: format!("{} samples", samples.len()),
            ..Transcript::default()
        })
    }
}

fn segment(samples: usize, speech_end_ms: u64, ended_by: TurnEnd) -> SpeechSegment {
    SpeechSegment {
        samples: vec![0.0; samples],
        start: Duration::ZERO,
        end: Duration::from_millis(speech_end_ms + 100),
        speech_end: Duration::from_millis(speech_end_ms),
        ended_by,
    }
}

fn run(jobs: Vec<AsrJob>) -> (Vec<usize>, Vec<Op>) {
    let asr = Counting::default();
    let (tx, rx) = channel();
    for job in jobs {
        tx.send(job).unwrap();
    }
    drop(tx);
    let (ops_tx, mut ops_rx) = mpsc::channel(8);
    serve(
        &asr,
        &rx,
        &Arc::default(),
        &Recognizing::default(),
        &ops_tx,
        &|_| {},
    );
    let mut ops = Vec::new();
    while let Ok(op) = ops_rx.try_recv() {
        ops.push(op);
    }
    (asr.0.into_inner().unwrap(), ops)
}

fn last_speculation_then_final(final_speech_end: u64) -> AsrJob {
    AsrJob::Final {
        segment: segment(
            3_000,
            final_speech_end,
            TurnEnd::ModelDone { probability: 0.95 },
        ),
        end_of_turn: Duration::from_millis(200),
        decided: Instant::now(),
        over_answer_only: false,
    }
}

fn speculate(samples: usize, speech_end_ms: u64) -> AsrJob {
    AsrJob::Speculate {
        snapshot: segment(samples, speech_end_ms, TurnEnd::Paused),
        went_on_at: 0,
    }
}

/// Sends a snapshot, then (once it is being recognised, after `meanwhile`, and after the worker
/// offered its words if `offered` is expected) the final segment ending at `final_speech_end`;
/// returns the ops the worker sent. (Queued together, the snapshot would be skipped unread: tested
/// below.)
fn snapshot_then_final(
    asr: &dyn SpeechToText,
    calls: &Mutex<Vec<usize>>,
    went_on: &Arc<AtomicU64>,
    final_speech_end: u64,
    offered: bool,
    meanwhile: impl FnOnce(),
) -> Vec<Op> {
    let (tx, rx) = channel();
    let (ops_tx, mut ops_rx) = mpsc::channel(8);
    tx.send(speculate(2_500, 1_000)).unwrap();
    let mut ops = Vec::new();
    let worker = std::thread::scope(|scope| {
        let handle = scope
            .spawn(move || serve(asr, &rx, went_on, &Recognizing::default(), &ops_tx, &|_| {}));
        while calls.lock().unwrap().is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        meanwhile();
        if offered {
            ops.push(ops_rx.blocking_recv().unwrap());
        }
        tx.send(last_speculation_then_final(final_speech_end))
            .unwrap();
        drop(tx);
        handle.join()
    });
    worker.unwrap();
    while let Ok(op) = ops_rx.try_recv() {
        ops.push(op);
    }
    ops
}

/// Runs the worker over `jobs` with `recognizing` until they are done.
fn serve_with(asr: &Counting, recognizing: &Recognizing, jobs: Vec<AsrJob>) {
    let (tx, rx) = channel();
    for job in jobs {
        tx.send(job).unwrap();
    }
    drop(tx);
    let (ops_tx, _ops_rx) = mpsc::channel(8);
    serve(asr, &rx, &Arc::default(), recognizing, &ops_tx, &|_| {});
}

#[test]
fn the_pause_words_are_there_for_the_end_of_turn_until_the_turn_ends() {
    let asr = Counting::default();
    let recognizing = Recognizing::default();
    serve_with(&asr, &recognizing, vec![speculate(2_500, 1_000)]);
    let heard = recognizing.words_of_this_pause(0).unwrap();
    assert_eq!(heard.text, "2500 samples");
    serve_with(&asr, &recognizing, vec![last_speculation_then_final(1_000)]);
    assert!(recognizing.words_of_this_pause(0).is_none());
}

#[test]
fn a_pause_that_went_stale_before_its_recognition_leaves_no_words() {
    let asr = Counting::default();
    let recognizing = Recognizing::default();
    serve_with(&asr, &recognizing, vec![speculate(2_500, 1_000)]);
    // Offered when the speaker had gone on once, read when twice: skipped, and the earlier pause's
    // words are not this pause's either.
    let (tx, rx) = channel();
    tx.send(AsrJob::Speculate {
        snapshot: segment(3_000, 1_200, TurnEnd::Paused),
        went_on_at: 0,
    })
    .unwrap();
    drop(tx);
    let (ops_tx, _ops_rx) = mpsc::channel(8);
    serve(
        &asr,
        &rx,
        &Arc::new(AtomicU64::new(1)),
        &recognizing,
        &ops_tx,
        &|_| {},
    );
    assert!(recognizing.words_of_this_pause(0).is_none());
    assert_eq!(
        *asr.0.lock().unwrap(),
        vec![2_500],
        "the stale one not recognised"
    );
}

#[test]
fn the_pause_transcript_is_reused_when_the_turn_ends_there() {
    let asr = Counting::default();
    let ops = snapshot_then_final(&asr, &asr.0, &Arc::default(), 1_000, true, || {});
    assert_eq!(
        *asr.0.lock().unwrap(),
        vec![2_500],
        "one decode: the pause's"
    );
    // The pause's words go to the session at once (it may start the answer), then the turn's end.
    assert_eq!(
        ops[0],
        Op::SpeechPaused {
            transcript: "2500 samples".into()
        }
    );
    match &ops[1] {
        Op::SpeechEnded {
            transcript,
            end_of_turn_ms,
            ..
        } => {
            assert_eq!(transcript, "2500 samples");
            assert_eq!(*end_of_turn_ms, 200);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn more_speech_after_the_pause_is_transcribed_afresh() {
    let (calls, ops) = run(vec![
        speculate(2_500, 1_000),
        last_speculation_then_final(1_400),
    ]);
    // Queued together: the stale snapshot is skipped (nothing anticipated), the final segment decoded.
    assert_eq!(calls, vec![3_000]);
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert!(matches!(&ops[0], Op::SpeechEnded { transcript, .. } if transcript == "3000 samples"));
}

#[test]
fn an_utterance_too_short_for_words_ends_with_none_and_keeps_its_flag() {
    let (calls, ops) = run(vec![AsrJob::Final {
        segment: segment(0, 300, TurnEnd::Hangover),
        end_of_turn: Duration::ZERO,
        decided: Instant::now(),
        over_answer_only: true,
    }]);
    assert!(calls.is_empty(), "nothing recognised: {calls:?}");
    assert!(
        matches!(
            &ops[..],
            [Op::SpeechEnded { transcript, over_answer_only: true, .. }] if transcript.is_empty()
        ),
        "{ops:?}"
    );
}

/// Recognises like [`Counting`], and the speaker goes on while it does (as `listen` reports it).
struct GoesOnMeanwhile {
    counting: Counting,
    went_on: Arc<AtomicU64>,
}

impl SpeechToText for GoesOnMeanwhile {
    fn name(&self) -> &str {
        "goes on meanwhile"
    }

    fn transcribe(&self, samples: &[f32]) -> Result<Transcript, AsrError> {
        self.went_on.fetch_add(1, Ordering::SeqCst);
        self.counting.transcribe(samples)
    }
}

#[test]
fn a_pause_the_speaker_talks_through_is_given_up_and_not_offered() {
    let went_on = Arc::new(AtomicU64::new(0));
    let asr = GoesOnMeanwhile {
        counting: Counting::default(),
        went_on: Arc::clone(&went_on),
    };
    let ops = snapshot_then_final(&asr, &asr.counting.0, &went_on, 1_000, false, || {});
    // No `speech_paused` for stale words, and the final segment is recognised afresh even though
    // it has the snapshot's start and end (the given-up snapshot has no transcript to reuse).
    assert_eq!(*asr.counting.0.lock().unwrap(), vec![2_500, 3_000]);
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(ended_with(&ops), "3000 samples");
}

/// A snapshot recognised, then the final segment ending at `final_speech_end`, with the speaker
/// going on in between or not: the decodes made and the ops sent.
fn speculate_then_final(final_speech_end: u64, went_on_between: bool) -> (Vec<usize>, Vec<Op>) {
    let asr = Counting::default();
    let went_on = Arc::new(AtomicU64::new(0));
    let ops = snapshot_then_final(&asr, &asr.0, &went_on, final_speech_end, false, || {
        if went_on_between {
            went_on.fetch_add(1, Ordering::SeqCst);
        }
    });
    (asr.0.into_inner().unwrap(), ops)
}

fn ended_with(ops: &[Op]) -> &str {
    ops.iter()
        .find_map(|op| match op {
            Op::SpeechEnded { transcript, .. } => Some(transcript.as_str()),
            _ => None,
        })
        .unwrap()
}

#[test]
fn a_final_segment_with_more_speech_or_after_going_on_is_recognised_afresh() {
    // More speech at the end than the snapshot held (the segmenter saw speech, however quiet).
    let (calls, ops) = speculate_then_final(1_064, false);
    assert_eq!(calls, vec![2_500, 3_000]);
    assert_eq!(ended_with(&ops), "3000 samples");
    // The same end, but the speaker went on in between (and stopped again).
    let (calls, ops) = speculate_then_final(1_000, true);
    assert_eq!(calls, vec![2_500, 3_000]);
    assert_eq!(ended_with(&ops), "3000 samples");
}

#[test]
fn a_pause_already_talked_through_is_not_recognised() {
    let asr = Counting::default();
    let (tx, rx) = channel();
    tx.send(speculate(2_500, 1_000)).unwrap(); // stamped at count 0
    drop(tx);
    let (ops_tx, mut ops_rx) = mpsc::channel(8);
    serve(
        &asr,
        &rx,
        &Arc::new(AtomicU64::new(1)),
        &Recognizing::default(),
        &ops_tx,
        &|_| {},
    );
    assert!(
        asr.0.lock().unwrap().is_empty(),
        "no decode for stale words"
    );
    assert!(ops_rx.try_recv().is_err());
}

/// Records, for each decode, whether the worker counted itself as recognising meanwhile.
struct Watched(Recognizing, Mutex<Vec<bool>>);

impl SpeechToText for Watched {
    fn name(&self) -> &str {
        "watched"
    }

    fn transcribe(&self, _: &[f32]) -> Result<Transcript, AsrError> {
        self.1.lock().unwrap().push(self.0.is_running());
        Ok(Transcript::default())
    }
}

#[test]
fn the_worker_counts_as_recognising_only_while_it_decodes() {
    let recognizing = Recognizing::default();
    let asr = Watched(recognizing.clone(), Mutex::default());
    let (tx, rx) = channel();
    // A pause's snapshot, then (in a second run: queued together, the snapshot would be skipped) a
    // final segment with more speech, which is decoded afresh.
    tx.send(speculate(2_500, 1_000)).unwrap();
    drop(tx);
    let (ops_tx, _ops) = mpsc::channel(8);
    serve(&asr, &rx, &Arc::default(), &recognizing, &ops_tx, &|_| {});
    let (tx, rx) = channel();
    tx.send(last_speculation_then_final(1_064)).unwrap();
    drop(tx);
    serve(&asr, &rx, &Arc::default(), &recognizing, &ops_tx, &|_| {});
    assert_eq!(*asr.1.lock().unwrap(), vec![true, true]);
    assert!(!recognizing.is_running(), "idle once the decodes returned");
}
