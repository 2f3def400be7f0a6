//! Local speech recognition with whisper.cpp (through whisper-rs).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use whisper_rs::{
    FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters, WhisperState,
};

use super::{AsrError, SpeechToText, Stale, Transcript};

/// Less than this (100 ms at 16 kHz) cannot hold a word; whisper.cpp would only hallucinate on it.
const MIN_SAMPLES: usize = 1_600;
/// Below this RMS (about -48 dBFS) there is no speech to find, and whisper answers silence with
/// hallucinations such as "you": return nothing instead.
const SILENCE_RMS: f32 = 0.004;
/// Segments whisper itself rates as probably not speech are dropped (its own default threshold).
const NO_SPEECH_THRESHOLD: f32 = 0.6;
/// Whisper writes Chinese in traditional or simplified characters as its training data happened to; a
/// prompt in simplified Mandarin steers it to simplified (what Tomo's characters and LLMs write).
const MANDARIN_PROMPT: &str = "以下是普通话的句子。";

#[derive(Debug, Clone)]
pub struct WhisperConfig {
    /// `en`, `zh`, ...; `None` detects the language (multilingual models only).
    pub language: Option<String>,
    pub threads: usize,
    /// `None` or 1: greedy decoding; more: beam search of that width (slower, a little more accurate).
    pub beam_size: Option<usize>,
}

impl Default for WhisperConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
        Self {
            language: None,
            threads,
            beam_size: None,
        }
    }
}

pub struct WhisperAsr {
    path: PathBuf,
    config: WhisperConfig,
    multilingual: bool,
    /// The weights are 4-bit (`base-4bit`): short clips get a wider encoder window (`audio_context`).
    four_bit: bool,
    /// One decoder state reused across calls (its buffers are sizeable); calls take turns.
    state: Mutex<WhisperState>,
    /// Keeps the model alive for the state.
    _context: WhisperContext,
}

impl std::fmt::Debug for WhisperAsr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhisperAsr")
            .field("path", &self.path)
            .field("config", &self.config)
            .finish()
    }
}

impl WhisperAsr {
    pub fn new(
        model_path: impl AsRef<Path>,
        language: Option<String>,
        threads: usize,
    ) -> Result<Self, AsrError> {
        Self::with_config(
            model_path,
            WhisperConfig {
                language,
                threads,
                ..WhisperConfig::default()
            },
        )
    }

    pub fn with_config(
        model_path: impl AsRef<Path>,
        config: WhisperConfig,
    ) -> Result<Self, AsrError> {
        let path = model_path.as_ref().to_path_buf();
        let shown = path.display().to_string();
        let load = |message: String| AsrError::ModelLoad {
            path: shown.clone(),
            message,
        };
        if !path.is_file() {
            return Err(AsrError::ModelMissing(shown));
        }
        if let Some(language) = &config.language
            && (language.is_empty() || !language.chars().all(|c| c.is_ascii_alphabetic()))
        {
            return Err(load(format!(
                "`{language}` is not a language code such as `en`"
            )));
        }
        check_header(&path).map_err(|e| load(e.to_string()))?;
        whisper_rs::install_logging_hooks();
        let path_str = path
            .to_str()
            .ok_or_else(|| load("path is not UTF-8".into()))?;
        let context =
            WhisperContext::new_with_params(path_str, WhisperContextParameters::default())
                .map_err(|e| {
                    load(format!(
                        "whisper.cpp rejected the file ({e}); it may be truncated or corrupt"
                    ))
                })?;
        let multilingual = context.is_multilingual();
        let four_bit = FOUR_BIT_FTYPES.contains(&context.model_ftype());
        if !multilingual && config.language.as_deref().is_some_and(|l| l != "en") {
            return Err(load(format!(
                "this model is English-only; language `{}` needs a multilingual model",
                config.language.as_deref().unwrap_or_default()
            )));
        }
        let state = context
            .create_state()
            .map_err(|e| load(format!("cannot create a decoder state: {e}")))?;
        tracing::info!(path = %path.display(), multilingual, "whisper model loaded");
        Ok(Self {
            path,
            config,
            multilingual,
            four_bit,
            state: Mutex::new(state),
            _context: context,
        })
    }

    pub fn model_path(&self) -> &Path {
        &self.path
    }
}

/// Why a file is not a model whisper.cpp can load; `ModelLoad` names the file around it.
#[derive(Debug, thiserror::Error)]
enum HeaderError {
    #[error("cannot read it: {0}")]
    Unreadable(#[source] std::io::Error),
    #[error("not a whisper.cpp ggml model (bad magic)")]
    BadMagic,
}

/// The ggml magic, so a wrong file gets a clear message instead of whisper.cpp's log line.
fn check_header(path: &Path) -> Result<(), HeaderError> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(HeaderError::Unreadable)?;
    if u32::from_le_bytes(magic) == 0x6767_6d6c {
        Ok(())
    } else {
        Err(HeaderError::BadMagic)
    }
}

/// Encoder positions for `samples` of 16 kHz audio: 50 per second plus 128 (2.6 s) of margin, never
/// below 384 of the model's 1500 (512 for clips under 2 s with 4-bit weights, below). Whisper's encoder always works on 30 s windows however short the
/// utterance; sizing the window to the audio cuts encoder time several-fold (base at f16, 2 cores,
/// questions of 2-3 s: 445 ms at a floor of 512, 343 ms at 384, 253 ms at 256; the q8_0 weights installed
/// now take about a quarter less). At 256 short turns garble (tests/whisper_asr.rs
/// `base_transcribes_short_turns`: "What time is it? What time is it?", flite WER 0.23); at 384 they read
/// as at 512. A floor of 256 for English turns of 2 s and more was tried (`examples/asr_window`: the same
/// WER on 2-3.6 s questions, recognition ≈ 20 % sooner) and left out: flite's "Hello there, how are you
/// today?" came back "Hello there, teller you today." in every take (tests/tts_round_trip.rs), and
/// espeak-ng's "How long does it take to boil an egg?" looped (0.87 s with decoding capped, 6.6 s
/// without). 320 passed those, but saves too little to be worth the doubt (≈ 30 ms on half the benchmark's
/// questions; the others are under 2 s).
///
/// 4-bit weights ([`FOUR_BIT_FTYPES`]; measured with iq4_nl) read turns of 2 s and more about as well as
/// 8-bit ones at the same window (`examples/asr_window`, WER flite 0.022 / 0.000 / 0.015 and espeak-ng
/// 0.067 / 0.188 / 0.108 against 0.022 / 0.083 / 0.015 and 0.133 / 0.188 / 0.092), but shorter clips
/// drift at 384: flite's "Yes, please." came back said twice, and the 0.7 s "mm-hm" hum of the talk-over
/// fixtures as "Yeah, like, you know?" (four words: it would take the floor from the character). At 512
/// both read right ("Yes, please.", "you"), and clips under 2 s still recognise sooner than 8-bit at 384
/// (≈ 240 against ≈ 280 ms on the 2-core machine).
fn audio_context(samples: usize, four_bit: bool) -> i32 {
    let floor = if four_bit && samples < SHORT_CLIP {
        512
    } else {
        384
    };
    let positions = (samples.div_ceil(320) + 128).max(floor);
    positions.min(1500) as i32
}

/// Under 2 s of 16 kHz audio: a word or two, a hum, a cough.
const SHORT_CLIP: usize = 32_000;

/// ggml file types (`whisper_model_ftype`, ggml's `GGML_FTYPE_MOSTLY_*`) whose weight matrices are
/// 4-bit: q4_0, q4_1, q4_K, iq4_nl, iq4_xs.
const FOUR_BIT_FTYPES: [i32; 5] = [2, 3, 12, 19, 22];

/// Whether `text` is whisper looping rather than the words of `samples` (16 kHz): more words than anyone
/// speaks in that much audio (~4.5 words per second, at least 8) *and* a run of three words said again,
/// or far more (7 per second, at least 12) whatever they are. Word count alone misjudged a plain
/// decode: flite's "Could you recommend a good book to read?" (2.1 s) comes back as "Could you write them
/// in the good book to read?", 10 words, over the limit of 9.5, and was decoded again with the full window
/// to the same words, 2.1-2.5 s instead of 0.35 (`examples/asr_window`).
fn looks_like_a_loop(text: &str, samples: usize) -> bool {
    let seconds = samples as f64 / 16_000.0;
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| {
            word.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|word| !word.is_empty())
        .collect();
    let count = words.len() as f64;
    let runaway = count > (seconds * 7.0).max(12.0);
    let too_many = count > (seconds * 4.5).max(8.0);
    runaway || (too_many && repeats_a_phrase(&words))
}

/// Some run of three words occurs twice.
fn repeats_a_phrase(words: &[String]) -> bool {
    let mut seen = std::collections::HashSet::new();
    words.windows(3).any(|phrase| !seen.insert(phrase))
}

impl WhisperAsr {
    /// One decode with an encoder window of `window` positions (0 = the model's full 1500).
    fn run(
        &self,
        state: &mut whisper_rs::WhisperState,
        samples: &[f32],
        language: Option<&str>,
        window: i32,
        stale: Option<&Stale>,
    ) -> Result<String, AsrError> {
        let strategy = match self.config.beam_size {
            Some(width) if width > 1 => SamplingStrategy::BeamSearch {
                beam_size: width as i32,
                patience: -1.0,
            },
            _ => SamplingStrategy::Greedy { best_of: 1 },
        };
        let mut params = FullParams::new(strategy);
        params.set_language(Some(language.unwrap_or("auto")));
        if language == Some("zh") {
            params.set_initial_prompt(MANDARIN_PROMPT);
        }
        params.set_n_threads(self.config.threads.max(1) as i32);
        params.set_no_timestamps(true);
        params.set_suppress_blank(true);
        params.set_suppress_nst(true);
        params.set_no_context(true); // each utterance stands alone; no drift from the previous one
        params.set_audio_ctx(window); // see `audio_context`
        params.set_print_special(false);
        params.set_print_progress(false);
        params.set_print_realtime(false);
        params.set_print_timestamps(false);
        if let Some(stale) = stale {
            // whisper.cpp asks once the encoder has run and after each decoder pass (its encoder cannot
            // stop midway), so a stale recognition gives up the decoding, not the encoder's ≈ 200 ms.
            // (whisper-rs' `set_abort_callback_safe` calls its boxed closure through the wrong type and
            // crashes, hence the plain C callback.)
            #[allow(unsafe_code)]
            // SAFETY: `user_data` points at `stale`, which outlives `state.full` below (the only call
            // that uses these params), and `ask_stale` only reads it.
            unsafe {
                params.set_abort_callback(Some(ask_stale));
                params.set_abort_callback_user_data(
                    std::ptr::from_ref::<Stale>(stale).cast_mut().cast(),
                );
            }
        }

        let done = state.full(params, samples);
        if stale.is_some_and(|stale| stale()) {
            return Err(AsrError::GivenUp);
        }
        done.map_err(|e| AsrError::Failed(format!("whisper.cpp: {e}")))?;
        let mut text = String::new();
        for segment in state.as_iter() {
            tracing::trace!(
                no_speech = segment.no_speech_probability(),
                "whisper segment"
            );
            if segment.no_speech_probability() > NO_SPEECH_THRESHOLD {
                continue;
            }
            let piece = segment
                .to_str_lossy()
                .map_err(|e| AsrError::Failed(e.to_string()))?;
            let piece = piece.trim();
            if !is_annotation(piece) {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(piece);
            }
        }
        Ok(text.trim().to_string())
    }
}

impl SpeechToText for WhisperAsr {
    fn name(&self) -> &str {
        "whisper"
    }

    fn transcribe(&self, samples: &[f32]) -> Result<Transcript, AsrError> {
        self.recognize(samples, None)
    }

    fn transcribe_unless(&self, samples: &[f32], stale: &Stale) -> Result<Transcript, AsrError> {
        self.recognize(samples, Some(stale))
    }
}

impl WhisperAsr {
    /// Each recognition runs on a thread of its own. On a CPU with AMX, ggml's q8_0 kernels configure
    /// the tile registers once per thread and trust that configuration afterwards; ONNX Runtime's int8
    /// kernels (Kokoro, the VAD) configure them their own way. On one shared thread the second
    /// recognition after a Kokoro sentence came out as garbage ("The", "Dr": 9 of 10 sentences lost in
    /// `tests/tts_kokoro.rs`); tile state is per thread, so a fresh thread always starts clean.
    fn recognize(&self, samples: &[f32], stale: Option<&Stale>) -> Result<Transcript, AsrError> {
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("tomo-whisper".into())
                .spawn_scoped(scope, || self.recognize_here(samples, stale))
                .map_err(|e| AsrError::Failed(format!("cannot start a recognition thread: {e}")))?
                .join()
                .map_err(|_| AsrError::Failed("the recognition thread panicked".into()))?
        })
    }

    fn recognize_here(
        &self,
        samples: &[f32],
        stale: Option<&Stale>,
    ) -> Result<Transcript, AsrError> {
        let language = if self.multilingual {
            self.config.language.clone()
        } else {
            Some("en".into())
        };
        if samples.len() < MIN_SAMPLES || rms(samples) < SILENCE_RMS {
            return Ok(Transcript {
                text: String::new(),
                language,
            });
        }
        let mut state = self
            .state
            .lock()
            .map_err(|_| AsrError::Failed("a previous transcription panicked".into()))?;
        let mut text = self.run(
            &mut state,
            samples,
            language.as_deref(),
            audio_context(samples.len(), self.four_bit),
            stale,
        )?;
        // A shortened window occasionally sends whisper into a loop (the same sentence seven times). Speech
        // is rarely faster than ~4 words per second: more than that means a loop, so decode again with the
        // full 30 s window (0 = the model's own size).
        if looks_like_a_loop(&text, samples.len()) {
            tracing::debug!(%text, "whisper output looks like a loop; decoding with the full window");
            text = self.run(&mut state, samples, language.as_deref(), 0, stale)?;
        }
        let detected = if self.multilingual && language.is_none() {
            whisper_rs::get_lang_str(state.full_lang_id_from_state()).map(str::to_string)
        } else {
            language
        };
        Ok(Transcript {
            text,
            language: detected,
        })
    }
}

/// whisper.cpp's abort hook.
///
/// # Safety
/// `user_data` must point at a live [`Stale`] for the whole call: `run` points it at one that outlives
/// `state.full`, the only call that uses it, and whisper calls the hook only during that call.
#[allow(unsafe_code)]
unsafe extern "C" fn ask_stale(user_data: *mut std::ffi::c_void) -> bool {
    // SAFETY: see the function's contract.
    let stale = unsafe { &*user_data.cast::<Stale>() };
    stale()
}

fn rms(samples: &[f32]) -> f32 {
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    (sum / samples.len().max(1) as f64).sqrt() as f32
}

/// `[BLANK_AUDIO]`, `(music)`, `*sigh*`: whisper's descriptions of non-speech, not words the user said.
fn is_annotation(piece: &str) -> bool {
    let wrapped = |open: char, close: char| piece.starts_with(open) && piece.ends_with(close);
    piece.is_empty() || wrapped('[', ']') || wrapped('(', ')') || wrapped('*', '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_follows_the_audio_with_a_wider_floor_for_short_clips_at_4_bits() {
        assert_eq!(audio_context(16_000, false), 384);
        assert_eq!(audio_context(16_000, true), 512);
        // 3 s: 150 positions + 128 of margin, under the floor either way.
        assert_eq!(audio_context(48_000, false), 384);
        assert_eq!(audio_context(48_000, true), 384);
        assert_eq!(audio_context(160_000, true), 628);
        assert_eq!(audio_context(16_000 * 40, true), 1500);
    }

    #[test]
    fn non_speech_annotations_are_dropped() {
        assert!(is_annotation("[BLANK_AUDIO]"));
        assert!(is_annotation("(upbeat music)"));
        assert!(!is_annotation("Hello there."));
    }

    #[test]
    fn missing_model_is_model_missing() {
        let error = WhisperAsr::new("/nonexistent/ggml-tiny.en.bin", None, 1).unwrap_err();
        assert!(
            matches!(error, AsrError::ModelMissing(ref p) if p.contains("ggml-tiny.en.bin")),
            "{error}"
        );
    }

    #[test]
    fn non_ggml_file_is_a_clear_load_error() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), b"definitely not a model").unwrap();
        let error = WhisperAsr::new(file.path(), None, 1).unwrap_err();
        assert!(error.to_string().contains("bad magic"), "{error}");
    }
}

#[cfg(test)]
mod loop_guard_tests {
    use super::looks_like_a_loop;

    #[test]
    fn a_repeated_sentence_in_a_short_clip_is_a_loop() {
        let sentence = "paris is the capital of france. ";
        assert!(looks_like_a_loop(&sentence.repeat(7), 5 * 16_000));
        assert!(!looks_like_a_loop(sentence, 5 * 16_000));
        // Fast but real speech: 20 words in 5 s.
        assert!(!looks_like_a_loop(&"word ".repeat(20), 5 * 16_000));
        assert!(
            !looks_like_a_loop("one two three", 8_000),
            "short clips get at least 8 words"
        );
    }

    #[test]
    fn fast_real_speech_is_not_a_loop() {
        // 10 words in 2.1 s (whisper's reading of flite's "Could you recommend a good book to read?").
        let fast = "Could you write them in the good book to read?";
        assert!(!looks_like_a_loop(fast, 33_600));
        // The same said twice in that time is.
        assert!(looks_like_a_loop(&format!("{fast} {fast}"), 33_600));
        // Far too many words for the audio is, repeated or not.
        let runaway: String = (0..40).map(|n| format!("w{n} ")).collect();
        assert!(looks_like_a_loop(&runaway, 4 * 16_000));
    }
}
