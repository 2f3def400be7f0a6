//! Whether what the user said over the character's answer was meant to stop it. Pure text logic over
//! the recogniser's transcript: a listening sound or an acknowledgement ("mm-hm", "yeah", "嗯", "うん")
//! is not; neither are words that are the character's own (the residue of its voice that the echo
//! canceller let through comes back from the recogniser as a fragment of the sentence being played);
//! anything else with enough words is.

use tomo_protocol::ResumeReason;

/// What to do with an answer held for speech over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The user means to speak: the answer stops, their words become the next turn.
    Yield,
    /// Go on with the answer.
    GoOn(ResumeReason),
}

/// Listening sounds and acknowledgements that leave the floor to the speaker (lowercase, without
/// punctuation). Whisper writes "mm-hm" in many spellings; hyphens are dropped before the look-up.
/// "Thank you" and "you" are also what whisper makes of noise.
const BACKCHANNELS: &[&str] = &[
    "mm",
    "mmm",
    "mmmm",
    "mhm",
    "mmhm",
    "mmhmm",
    "mhmm",
    "hm",
    "hmm",
    "hmmm",
    "uhhuh",
    "uhuh",
    "uh",
    "um",
    "umm",
    "ah",
    "oh",
    "ooh",
    "wow",
    "yeah",
    "yea",
    "yep",
    "yup",
    "yes",
    "ok",
    "okay",
    "right",
    "sure",
    "cool",
    "nice",
    "i",
    "see",
    "gotcha",
    "aha",
    "thank",
    "thanks",
    "you",
    "嗯",
    "嗯嗯",
    "嗯哼",
    "哦",
    "噢",
    "啊",
    "对",
    "对对",
    "对对对",
    "是",
    "是的",
    "好",
    "好的",
    "うん",
    "うんうん",
    "はい",
    "ええ",
    "そう",
    "そうそう",
    "なるほど",
    "へえ",
    "へー",
    "ああ",
];

/// Words that ask the character to stop even when it happens to be saying them itself.
const STOP_WORDS: &[&str] = &[
    "stop",
    "wait",
    "no",
    "hey",
    "hold",
    "pause",
    "quiet",
    "enough",
    "sorry",
    "excuse",
    "actually",
    "停",
    "等等",
    "等一下",
    "别说了",
    "待って",
    "ちょっと",
    "やめて",
    "すみません",
];

/// Share of the words that must be the character's own for the whole to count as its echo.
const OWN_SHARE: f32 = 0.7;

/// What the words over the answer are judged against.
#[derive(Debug, Clone, Copy)]
pub struct Judging<'a> {
    /// The sentences the character said lately (what its echo could be).
    pub own_speech: &'a [String],
    /// Words that are neither a backchannel nor its own needed to yield, unless one asks to stop.
    pub min_words: usize,
    /// The speech stopped when the character went quiet (nothing of it came after the hold): only a
    /// request to stop yields.
    pub over_answer_only: bool,
}

/// Judges `transcript` (what the user said over the answer).
pub fn verdict(transcript: &str, judging: &Judging<'_>) -> Verdict {
    let Judging {
        own_speech,
        min_words,
        over_answer_only,
    } = *judging;
    let heard = words(transcript);
    if heard.is_empty() {
        return Verdict::GoOn(ResumeReason::NoWords);
    }
    let content: Vec<&String> = heard
        .iter()
        .filter(|w| !BACKCHANNELS.contains(&w.as_str()))
        .collect();
    if content.is_empty() {
        return Verdict::GoOn(ResumeReason::Backchannel);
    }
    let asks_to_stop = STOP_WORDS.iter().any(|stop| {
        if stop.chars().all(is_spaceless_script) {
            transcript.contains(stop)
        } else {
            content.iter().any(|w| w == stop)
        }
    });
    if over_answer_only && !asks_to_stop {
        return Verdict::GoOn(ResumeReason::OnlyOverAnswer);
    }
    if !asks_to_stop && is_own_echo(transcript, own_speech) {
        return Verdict::GoOn(ResumeReason::OwnVoice);
    }
    if !asks_to_stop && content.len() < min_words.max(1) {
        return Verdict::GoOn(ResumeReason::Backchannel);
    }
    Verdict::Yield
}

/// Whether most of the heard content words are the character's own. Compared with contractions
/// spelled out on both sides (the character says "It is noon." and whisper writes its echo "It's
/// noon.") and without the little words a contraction stands for ("is", "not", …): they are in most
/// sentences, and counting them would make "It's not sunny here." over "it is not going to rain" the
/// character's own.
fn is_own_echo(transcript: &str, own_speech: &[String]) -> bool {
    let weighed = |text: &str| -> Vec<String> {
        words(&spelled_out(text))
            .into_iter()
            .filter(|w| !BACKCHANNELS.contains(&w.as_str()) && !CONTRACTED.contains(&w.as_str()))
            .collect()
    };
    let own: Vec<String> = own_speech.iter().flat_map(|s| weighed(s)).collect();
    let content = weighed(transcript);
    let echoed = content.iter().filter(|w| own.contains(w)).count();
    !content.is_empty() && echoed as f32 >= OWN_SHARE * content.len() as f32
}

/// The words English contractions stand for ("it's", "don't", "we'll"): left out of the comparison.
const CONTRACTED: &[&str] = &[
    "is", "am", "are", "not", "will", "shall", "have", "would", "do", "does", "did", "can",
];

/// English contractions as whole words ("it's" → "it is", "don't" → "do not"); the same spelling on
/// both sides is what matters, so "Hana's" → "Hana is" does no harm.
fn spelled_out(text: &str) -> String {
    const IRREGULAR: &[(&str, &str)] = &[
        ("can't", "can not"),
        ("won't", "will not"),
        ("shan't", "shall not"),
    ];
    const ENDINGS: &[(&str, &str)] = &[
        ("n't", " not"),
        ("'re", " are"),
        ("'ve", " have"),
        ("'ll", " will"),
        ("'m", " am"),
        ("'s", " is"),
        ("'d", " would"),
    ];
    let mut out = String::with_capacity(text.len() + 16);
    for token in text.split_whitespace() {
        let token = token.replace('\u{2019}', "'");
        let end = token.trim_end_matches(|c: char| !c.is_alphanumeric());
        let trailing = &token[end.len()..];
        let lower = end.to_lowercase();
        let irregular = IRREGULAR
            .iter()
            .find(|(short, _)| *short == lower)
            .map(|(_, whole)| (*whole).to_owned());
        let expanded = irregular.or_else(|| {
            ENDINGS.iter().find_map(|(ending, whole)| {
                let stem = lower.strip_suffix(ending)?;
                (!stem.is_empty() && stem.chars().all(char::is_alphabetic))
                    .then(|| format!("{stem}{whole}"))
            })
        });
        if !out.is_empty() {
            out.push(' ');
        }
        match expanded {
            Some(words) => {
                out.push_str(&words);
                out.push_str(trailing);
            }
            None => out.push_str(&token),
        }
    }
    out
}

/// Lowercase words without punctuation; hyphens and apostrophes join ("mm-hm" → "mmhm"). A run of a
/// script without spaces (Chinese, Japanese) that is not a backchannel as a whole ("嗯嗯", "うんうん")
/// becomes its overlapping pairs of characters, so a fragment of the character's sentence is found in
/// it wherever the recogniser cut it.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || is_separator(c)) {
        if is_spelled_hum(raw) {
            out.push("mm".to_owned());
            continue;
        }
        let word: String = raw
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        let chars: Vec<char> = word.chars().collect();
        let spaceless = chars.iter().copied().all(is_spaceless_script);
        if word.is_empty() {
            continue;
        } else if spaceless && chars.len() > 1 && !BACKCHANNELS.contains(&word.as_str()) {
            out.extend(chars.windows(2).map(|pair| pair.iter().collect::<String>()));
        } else {
            out.push(word);
        }
    }
    out
}

/// Whisper writes a hum it cannot spell as hyphenated single letters ("M-M-H", "H-M-M-M").
fn is_spelled_hum(raw: &str) -> bool {
    let letters: Vec<&str> = raw
        .trim_matches(|c: char| !c.is_alphanumeric())
        .split('-')
        .collect();
    letters.len() >= 2
        && letters
            .iter()
            .all(|l| l.chars().count() == 1 && l.chars().all(char::is_alphabetic))
}

fn is_separator(c: char) -> bool {
    matches!(
        c,
        ',' | '.'
            | '!'
            | '?'
            | ';'
            | ':'
            | '…'
            | '，'
            | '。'
            | '！'
            | '？'
            | '、'
            | '；'
            | '：'
            | '"'
    )
}

fn is_spaceless_script(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judging(own_speech: &[String], min_words: usize) -> Judging<'_> {
        Judging {
            own_speech,
            min_words,
            over_answer_only: false,
        }
    }

    #[test]
    fn speech_heard_only_over_the_answer_stops_it_only_when_it_asks_to() {
        let speaking = own(&["Sure, I can remind you to drink some water."]);
        let only_over = |heard: &str| {
            verdict(
                heard,
                &Judging {
                    own_speech: &speaking,
                    min_words: 1,
                    over_answer_only: true,
                },
            )
        };
        assert_eq!(
            only_over("Chair."),
            Verdict::GoOn(ResumeReason::OnlyOverAnswer)
        );
        assert_eq!(
            only_over("and then they turn around"),
            Verdict::GoOn(ResumeReason::OnlyOverAnswer)
        );
        assert_eq!(only_over("Stop!"), Verdict::Yield);
        assert_eq!(only_over("Wait."), Verdict::Yield);
        assert_eq!(
            only_over("Mm-hmm."),
            Verdict::GoOn(ResumeReason::Backchannel)
        );
        assert_eq!(only_over(""), Verdict::GoOn(ResumeReason::NoWords));
    }

    fn own(sentences: &[&str]) -> Vec<String> {
        sentences.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn nothing_recognised_goes_on() {
        assert_eq!(
            verdict("", &judging(&[], 1)),
            Verdict::GoOn(ResumeReason::NoWords)
        );
        assert_eq!(
            verdict(" ... ", &judging(&[], 1)),
            Verdict::GoOn(ResumeReason::NoWords)
        );
    }

    #[test]
    fn listening_sounds_and_acknowledgements_go_on() {
        for heard in [
            "Mm-hmm.",
            "Mhm",
            "Uh-huh.",
            "Yeah.",
            "Yeah, yeah.",
            "Okay.",
            "Oh, I see.",
            "Hmm...",
            "M-M-H-M.",
            "H-M-M-M",
            "Thank you.",
            "嗯。",
            "嗯嗯",
            "对对",
            "うん。",
            "はい",
        ] {
            assert_eq!(
                verdict(heard, &judging(&[], 1)),
                Verdict::GoOn(ResumeReason::Backchannel),
                "{heard}"
            );
        }
    }

    #[test]
    fn words_yield() {
        let speaking = own(&["The weather tomorrow looks sunny and warm."]);
        for heard in [
            "What about Saturday?",
            "Wait.",
            "Can you tell me a joke instead?",
            "Yeah, but what about rain?",
            "明天呢？",
            "ちょっと待って",
        ] {
            assert_eq!(
                verdict(heard, &judging(&speaking, 1)),
                Verdict::Yield,
                "{heard}"
            );
        }
    }

    #[test]
    fn the_characters_own_words_are_its_echo() {
        let speaking = own(&["Of course!", "The weather tomorrow looks sunny and warm."]);
        for heard in ["sunny and warm", "The weather tomorrow.", "Of course."] {
            assert_eq!(
                verdict(heard, &judging(&speaking, 1)),
                Verdict::GoOn(ResumeReason::OwnVoice),
                "{heard}"
            );
        }
        // Its own word, but one that asks it to stop, stops it.
        let speaking = own(&["No, I think we should wait for the rain to stop."]);
        assert_eq!(verdict("Stop.", &judging(&speaking, 1)), Verdict::Yield);
        let speaking = own(&["ちょっと待ってね、今調べるから。"]);
        assert_eq!(
            verdict("ちょっと待って", &judging(&speaking, 1)),
            Verdict::Yield
        );
        assert_eq!(
            verdict("今調べるから", &judging(&speaking, 1)),
            Verdict::GoOn(ResumeReason::OwnVoice)
        );
        // Mostly other words: the user's.
        assert_eq!(
            verdict(
                "the weather in Paris next week",
                &judging(&own(&["The weather tomorrow."]), 1)
            ),
            Verdict::Yield
        );
    }

    #[test]
    fn contractions_do_not_hide_the_characters_own_words() {
        // The character said it in full, whisper wrote its echo contracted, and the other way round.
        let speaking = own(&["Hmm, let me check the time.", "It is noon, time for lunch!"]);
        assert_eq!(
            verdict("It's noon.", &judging(&speaking, 1)),
            Verdict::GoOn(ResumeReason::OwnVoice)
        );
        let speaking = own(&["I\u{2019}m sure you don't need an umbrella."]);
        assert_eq!(
            verdict("I am sure you do not need", &judging(&speaking, 1)),
            Verdict::GoOn(ResumeReason::OwnVoice)
        );
        // The user's own contracted words still stop it, also when they share the little words.
        assert_eq!(
            verdict("What's the weather in Paris?", &judging(&speaking, 1)),
            Verdict::Yield
        );
        let speaking = own(&["It is sunny in Paris today, so it is not going to rain."]);
        assert_eq!(
            verdict("It's not sunny here.", &judging(&speaking, 1)),
            Verdict::Yield
        );
        let speaking = own(&["You cannot miss it, it will not rain."]);
        assert_eq!(
            verdict("You can't miss it.", &judging(&speaking, 1)),
            Verdict::GoOn(ResumeReason::OwnVoice)
        );
        assert_eq!(spelled_out("Won't"), "will not");
        assert_eq!(
            spelled_out("'Sure,' she said. Hana's cat isn't here!"),
            "'Sure,' she said. hana is cat is not here!"
        );
    }

    #[test]
    fn chinese_echo_is_found_by_its_pieces() {
        let speaking = own(&["今天天气很好，我们去公园散步吧。"]);
        assert_eq!(
            verdict("我们去公园散步", &judging(&speaking, 1)),
            Verdict::GoOn(ResumeReason::OwnVoice)
        );
        assert_eq!(
            verdict("我想听一个故事", &judging(&speaking, 1)),
            Verdict::Yield
        );
    }

    /// Whisper makes words of a hum: over the echo fixtures a synthesized "mm-hm" came back as
    /// "What?", "Yeah.", "You", "Anam hum." depending on the room and the canceller's state. Two words
    /// (the default) let one such word go on; a word asking to stop still yields alone.
    #[test]
    fn one_word_yields_only_if_it_asks_to_stop() {
        for heard in ["What?", "Amir.", "Really?"] {
            assert_eq!(
                verdict(heard, &judging(&[], 2)),
                Verdict::GoOn(ResumeReason::Backchannel),
                "{heard}"
            );
        }
        for heard in ["Wait.", "Stop!", "No.", "Hey!", "ちょっと"] {
            assert_eq!(verdict(heard, &judging(&[], 2)), Verdict::Yield, "{heard}");
        }
    }

    #[test]
    fn the_profile_can_ask_for_more_words() {
        assert_eq!(
            verdict("Yeah, funny.", &judging(&[], 2)),
            Verdict::GoOn(ResumeReason::Backchannel)
        );
        assert_eq!(
            verdict("Yeah, that's funny.", &judging(&[], 2)),
            Verdict::Yield
        );
    }
}
