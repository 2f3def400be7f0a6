//! Kokoro from the model store, run for real: English and Mandarin voices understood by whisper base, female
//! and male voices told apart by pitch, and the bad cases (unknown voice, nothing to say, a sentence far
//! longer than one model run).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "tts_common/mod.rs"]
mod common;

use std::time::Instant;

use common::{kokoro, rms};
use tomo_speech::asr::whisper::WhisperAsr;
use tomo_speech::asr::{SpeechToText, character_error_rate, normalize_words, word_error_rate};
use tomo_speech::tts::kokoro::MAX_TOKENS;
use tomo_speech::tts::kokoro::zh_numbers::read_numbers;
use tomo_speech::tts::{KokoroPaths, KokoroTts, TextToSpeech, TtsError};

const ENGLISH: [&str; 10] = [
    "Hello there, how are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "Please remind me to call my sister tomorrow morning.",
    "I made you a cup of tea while you were working.",
    "The weather looks lovely, so let's go for a walk.",
    "Did you finish reading that book about the ocean?",
    "My favorite color has always been a soft shade of blue.",
    "Don't forget to drink some water and take a break.",
    "We could watch a movie together this evening.",
    "Thank you for telling me about your day.",
];

/// Everyday Mandarin, numbers written with digits as an LLM writes them.
const MANDARIN: [&str; 10] = [
    "今天天气很好，我们出去走走吧。",
    "我每天早上7点起床。",
    "这本书一共有320页。",
    "你想喝茶还是喝咖啡？",
    "我下午3点要去开会。",
    "这个苹果5块钱一斤。",
    "明天是我妹妹的生日。",
    "我们家离学校只有2公里。",
    "谢谢你陪我聊天，我很开心。",
    "现在是晚上10点，该睡觉了。",
];

fn whisper(language: &str) -> Option<WhisperAsr> {
    let model = common::models_root().join("whisper/ggml-base-q8_0.bin");
    if !model.is_file() {
        let message = format!("{} is missing (run `tomo models install`)", model.display());
        assert!(std::env::var_os("CI").is_none(), "{message}");
        println!("skipped: {message}");
        return None;
    }
    Some(WhisperAsr::new(&model, Some(language.into()), 2).unwrap())
}

fn hear(asr: &WhisperAsr, tts: &KokoroTts, text: &str) -> String {
    let audio = tts.synthesize(text).unwrap();
    assert_eq!(audio.sample_rate, 24_000);
    assert!(rms(&audio.samples) > 0.02, "too quiet: {text}");
    let samples = common::resample(&audio.samples, audio.sample_rate, 16_000);
    asr.transcribe(&samples).unwrap().text
}

#[test]
fn english_female_voice_round_trip_wer_at_most_a_tenth() {
    let (Some(tts), Some(asr)) = (kokoro("af_heart", 1.0), whisper("en")) else {
        return;
    };
    let (mut errors, mut words) = (0.0, 0.0);
    for text in ENGLISH {
        let heard = hear(&asr, &tts, text);
        let n = normalize_words(text).len() as f64;
        let wer = word_error_rate(text, &heard);
        println!("{wer:.2}  said {text:?}  heard {heard:?}");
        errors += wer * n;
        words += n;
    }
    let wer = errors / words;
    println!("af_heart WER over {} sentences: {wer:.3}", ENGLISH.len());
    assert!(wer <= 0.1, "WER {wer:.3}");
}

/// Whisper writes numbers as digits or as Hanzi as it likes: both sides are read out before comparing.
fn mandarin_cer(reference: &str, heard: &str) -> f64 {
    character_error_rate(&read_numbers(reference), &read_numbers(heard))
}

#[test]
fn mandarin_voice_is_understood_cer_at_most_a_fifth() {
    let (Some(tts), Some(asr)) = (kokoro("zf_xiaoxiao", 1.0), whisper("zh")) else {
        return;
    };
    let (mut errors, mut chars) = (0.0, 0.0);
    for text in MANDARIN {
        let heard = hear(&asr, &tts, text);
        let reference = read_numbers(text);
        let n = reference.chars().filter(|c| c.is_alphanumeric()).count() as f64;
        let cer = mandarin_cer(text, &heard);
        println!("{cer:.2}  said {text:?}  heard {heard:?}");
        errors += cer * n;
        chars += n;
    }
    let cer = errors / chars;
    println!(
        "zf_xiaoxiao CER over {} sentences: {cer:.3}",
        MANDARIN.len()
    );
    assert!(cer <= 0.2, "CER {cer:.3}");
}

const JAPANESE: [&str; 5] = [
    "今日はいい天気ですね。",
    "明日は友達と映画を見に行きます。",
    "お茶を一杯いかがですか？",
    "駅まで歩いて十分かかります。",
    "ありがとう、とても嬉しいです。",
];

/// Japanese has no target in the issue; this keeps the front end honest (a broken kana table or MeCab
/// reading gives noise, not a CER of a few tenths).
#[test]
fn japanese_voice_is_understood() {
    let (Some(tts), Some(asr)) = (kokoro("jf_alpha", 1.0), whisper("ja")) else {
        return;
    };
    let (mut errors, mut chars) = (0.0, 0.0);
    for text in JAPANESE {
        let heard = hear(&asr, &tts, text);
        let n = text.chars().filter(|c| c.is_alphanumeric()).count() as f64;
        let cer = character_error_rate(text, &heard);
        println!("{cer:.2}  said {text:?}  heard {heard:?}");
        errors += cer * n;
        chars += n;
    }
    let cer = errors / chars;
    println!("jf_alpha CER over {} sentences: {cer:.3}", JAPANESE.len());
    assert!(cer <= 0.35, "CER {cer:.3}");
}

#[test]
fn female_voices_are_higher_than_male_ones() {
    let voices = ["af_heart", "am_michael", "zf_xiaoxiao", "zm_yunjian"];
    let Some(tts) = voices
        .iter()
        .map(|v| kokoro(v, 1.0))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let pitch = |tts: &KokoroTts, text: &str| {
        let audio = tts.synthesize(text).unwrap();
        common::median_pitch_hz(&common::resample(&audio.samples, 24_000, 16_000), 16_000)
    };
    let english = ENGLISH[3];
    let (heart, michael) = (pitch(&tts[0], english), pitch(&tts[1], english));
    let (xiaoxiao, yunjian) = (pitch(&tts[2], MANDARIN[6]), pitch(&tts[3], MANDARIN[6]));
    println!("median pitch: af_heart {heart:.0} Hz, am_michael {michael:.0} Hz");
    println!("median pitch: zf_xiaoxiao {xiaoxiao:.0} Hz, zm_yunjian {yunjian:.0} Hz");
    for (female, male) in [(heart, michael), (xiaoxiao, yunjian)] {
        assert!(
            (160.0..300.0).contains(&female),
            "female voice at {female:.0} Hz"
        );
        assert!((70.0..160.0).contains(&male), "male voice at {male:.0} Hz");
        assert!(
            female > male * 1.3,
            "female {female:.0} Hz, male {male:.0} Hz"
        );
    }
}

#[test]
fn an_unknown_voice_is_named_with_the_installed_ones() {
    let Some(_) = kokoro("af_heart", 1.0) else {
        return;
    };
    let root = common::models_root();
    let paths = KokoroPaths::in_store(&root);
    let runtime = tomo_speech::tts::runtime_path(&root);
    for bad in ["af_nobody", "../piper/en_US-joe-medium", ""] {
        let error = KokoroTts::new(&paths, bad, &runtime, 1.0).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, TtsError::UnknownVoice { .. }), "{error:?}");
        assert!(message.contains(&format!("`{bad}`")), "{message}");
        assert!(
            message.contains("af_heart") && message.contains("zf_xiaoxiao"),
            "{message}"
        );
    }
}

#[test]
fn nothing_to_say_gives_empty_audio() {
    let (Some(en), Some(zh)) = (kokoro("af_heart", 1.0), kokoro("zf_xiaoxiao", 1.0)) else {
        return;
    };
    for tts in [&en, &zh] {
        for text in ["", "   ", "😀🎉", "...", "？！", "——"] {
            let audio = tts.synthesize(text).unwrap();
            assert!(audio.samples.is_empty(), "{}: {text:?}", tts.voice());
        }
    }
}

#[test]
fn a_two_thousand_character_sentence_is_split_within_the_style_table() {
    let (Some(en), Some(zh)) = (kokoro("af_heart", 1.0), kokoro("zf_xiaoxiao", 1.0)) else {
        return;
    };
    let english = ["one two three four five six seven eight nine ten"; 41].join(" ");
    let mandarin: String = "我们今天一起去公园散步然后吃饭"
        .chars()
        .cycle()
        .take(2000)
        .collect();
    for (tts, text) in [(&en, &english[..2000]), (&zh, mandarin.as_str())] {
        let pieces = tts.phonemize(text).unwrap();
        assert!(
            pieces.len() >= 3,
            "{}: {} piece(s)",
            tts.voice(),
            pieces.len()
        );
        let mut total = 0;
        for piece in &pieces {
            let tokens = tts.vocab().tokens(piece).ids.len();
            assert!((1..=MAX_TOKENS).contains(&tokens), "{tokens} tokens");
            total += tokens;
        }
        assert!(
            total > 2 * MAX_TOKENS,
            "{}: only {total} tokens kept",
            tts.voice()
        );
    }
    // Synthesizing all of it takes minutes on two cores; one sentence just over one model run shows the
    // pieces are spoken one after the other.
    let longer = &english[..600];
    let pieces = en.phonemize(longer).unwrap();
    assert_eq!(pieces.len(), 2, "{pieces:?}");
    let audio = en.synthesize(longer).unwrap();
    let words = longer.split_whitespace().count() as f64;
    assert!(
        audio.duration_secs() > 0.2 * words,
        "{:.1} s for {words} words",
        audio.duration_secs()
    );
}

#[test]
fn same_text_same_audio() {
    let Some(tts) = kokoro("af_heart", 1.0) else {
        return;
    };
    let a = tts.synthesize("Same words twice.").unwrap();
    let b = tts.synthesize("Same words twice.").unwrap();
    assert_eq!(a.samples, b.samples, "Kokoro samples no noise");
    let fast = kokoro("af_heart", 1.5).unwrap();
    let quick = fast.synthesize(ENGLISH[1]).unwrap().duration_secs();
    let normal = tts.synthesize(ENGLISH[1]).unwrap().duration_secs();
    assert!(
        quick < normal * 0.85,
        "1.0: {normal:.2} s, 1.5: {quick:.2} s"
    );
}

/// Not a timing assertion: prints the real-time factor for the report.
#[test]
fn reports_real_time_factor() {
    let Some(tts) = kokoro("af_heart", 1.0) else {
        return;
    };
    tts.synthesize("Warm up.").unwrap();
    let text = ENGLISH[..3].join(" ");
    let start = Instant::now();
    let audio = tts.synthesize(&text).unwrap();
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "Kokoro RTF: {:.3} ({elapsed:.2} s to synthesize {:.2} s of audio)",
        elapsed / audio.duration_secs(),
        audio.duration_secs()
    );
}
