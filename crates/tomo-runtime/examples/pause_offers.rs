//! How often the live segmenter offers an utterance for speculative recognition while the speaker goes
//! on (the offer goes stale), and when the last offer's words would be ready after the last sound of each
//! recording: real Silero VAD and the live segmenter configuration, whisper modelled as one worker that
//! takes 250 ms per recognition and gives a stale one up once it has gone stale, not before its 200 ms
//! encoder (as `asr_worker.rs` does; measured 230-290 / 190-230 ms with whisper base on two cores). The
//! last sound is the last 10 ms block over [`SOUND_RMS`], as `tomo bench voice --device` finds it.
//!
//! `cargo run --release -p tomo-runtime --example pause_offers -- ~/.cache/tomo/turn-set/*-complete.wav`
//! (the paused-speech set: `scripts/make-turn-set.py`). The model store is `$TOMO_MODELS_DIR` or
//! `~/.local/share/tomo/models`.

use anyhow::{Context, Result};
use tomo_audio::{FRAME_SAMPLES, Segmenter, SegmenterEvent, read_wav_16k};

const ENCODER_MS: f64 = 200.0;
const RECOGNITION_MS: f64 = 250.0;
/// A 10 ms block over this RMS (-50 dBFS) is sound (`SOUND_RMS` of the device benchmark).
const SOUND_RMS: f32 = 0.003;

/// An offer: when it was made (ms into the recording) and when the speaker went on after it.
struct Offer {
    at: f64,
    resumed: Option<f64>,
}

/// When the words of the last offer that did not go stale are ready, on one worker.
fn ready_at(offers: &[Offer]) -> Option<f64> {
    let mut free = 0.0f64;
    let mut ready = None;
    for offer in offers {
        let start = free.max(offer.at);
        if offer.resumed.is_some_and(|r| r <= start) {
            continue; // stale before it started: never run
        }
        // Gone stale before the end: given up once the encoder has run and whisper next asks (after
        // the encoder, then after each decoder pass), i.e. when the speaker went on but not before the
        // encoder's end.
        let busy = match offer.resumed {
            Some(resumed) => (resumed - start).clamp(ENCODER_MS, RECOGNITION_MS),
            None => RECOGNITION_MS,
        };
        free = start + busy;
        if offer.resumed.is_none() {
            ready = Some(free);
        }
    }
    ready
}

fn main() -> Result<()> {
    let store = tomo_models::ModelStore::from_env()?;
    let (mut offered, mut stale, mut files) = (0, 0, 0);
    let mut ready = Vec::new();
    for path in std::env::args().skip(1) {
        let audio = read_wav_16k(std::path::Path::new(&path)).with_context(|| path.clone())?;
        let mut segmenter = Segmenter::new(
            tomo_runtime::voice::vad(&store)?,
            &tomo_runtime::voice::segmenter_config(),
        );
        let mut samples = vec![0.0f32; 8_000];
        samples.extend(&audio);
        samples.extend(vec![0.0f32; 32_000]);
        let sounding = samples.chunks(160).rposition(|b| {
            (b.iter().map(|x| x * x).sum::<f32>() / b.len() as f32).sqrt() > SOUND_RMS
        });
        let Some(last_block) = sounding else {
            continue;
        };
        let last_sound_ms = (last_block + 1) as f64 * 10.0;
        files += 1;
        let mut offers: Vec<Offer> = Vec::new();
        for (k, frame) in samples.chunks_exact(FRAME_SAMPLES).enumerate() {
            let now_ms = (k + 1) as f64 * 32.0;
            for event in segmenter.push(frame)? {
                match event {
                    SegmenterEvent::Pause(_) => {
                        offered += 1;
                        offers.push(Offer {
                            at: now_ms,
                            resumed: None,
                        });
                    }
                    SegmenterEvent::Resumed { .. } => {
                        stale += 1;
                        if let Some(offer) = offers.last_mut() {
                            offer.resumed = Some(now_ms);
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(at) = ready_at(&offers) {
            ready.push(at - last_sound_ms);
        }
    }
    if ready.is_empty() {
        println!("{files} recordings: no utterance offered");
        return Ok(());
    }
    ready.sort_by(f64::total_cmp);
    let at = |q: f64| ready[((ready.len() - 1) as f64 * q).round() as usize];
    println!(
        "{files} recordings: {offered} offers, {stale} went stale; words ready after the last sound: p50 {:.0} ms, p90 {:.0} ms, max {:.0} ms",
        at(0.5),
        at(0.9),
        at(1.0)
    );
    Ok(())
}
