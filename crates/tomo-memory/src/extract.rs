//! Fact extraction: one JSON-only LLM call per finished turn. The model sees the exchange and the
//! related facts already stored (with ids), and answers which facts to add and which stored facts a new
//! statement replaces. Answers are parsed leniently (code fences, prose around the JSON, strings or
//! objects in the lists); an answer that still makes no sense is an error the caller logs and skips.

use serde_json::Value;
use tomo_llm::{ChatMessage, LlmClient};

use crate::store::{Fact, STOP_WORDS};

/// What the extractor decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extraction {
    pub add: Vec<String>,
    /// (id of the stored fact, the fact that replaces it)
    pub supersede: Vec<(i64, String)>,
}

impl Extraction {
    pub fn is_empty(&self) -> bool {
        self.add.is_empty() && self.supersede.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("fact extraction: the LLM call failed: {0}")]
    Llm(#[from] tomo_llm::LlmError),
    #[error("fact extraction: unusable answer ({reason}): {answer}")]
    Malformed { reason: String, answer: String },
}

const INSTRUCTIONS: &str = "You maintain the long-term memory of a companion character about its user. \
From the exchange below, extract durable facts worth remembering for weeks: the user's name, people and \
pets in their life, preferences, plans, important events, where they live or work. Ignore small talk, \
questions, and anything only true for this moment. Write each fact as one short sentence about \"The user\".\n\
If a new statement changes a stored fact (the user moved, changed jobs, changed their mind), do not add it: \
put it in \"supersede\" with the id of the stored fact it replaces.\n\
Answer with JSON only, no prose, exactly this shape:\n\
{\"add\": [\"The user ...\"], \"supersede\": [{\"id\": 12, \"fact\": \"The user ...\"}]}\n\
Use empty lists when there is nothing to remember.";

/// The extraction request: instructions, stored related facts with ids, then the exchange.
pub fn extraction_messages(
    user_text: &str,
    assistant_text: &str,
    related: &[Fact],
) -> Vec<ChatMessage> {
    let mut stored = String::new();
    if related.is_empty() {
        stored.push_str("(none)");
    }
    // The date goes before the fact: after it, small models copied "(2026-12-03)" into the facts they
    // wrote, and every supersede added another.
    for fact in related {
        stored.push_str(&format!(
            "- id {} (learned {}): {}\n",
            fact.id,
            fact.created_at.format("%Y-%m-%d"),
            fact.fact
        ));
    }
    vec![
        ChatMessage::system(INSTRUCTIONS),
        ChatMessage::user(format!(
            "Stored facts:\n{}\n\nExchange:\nUser: {}\nCharacter: {}",
            stored.trim_end(),
            user_text.trim(),
            assistant_text.trim()
        )),
    ]
}

/// Runs one completion and returns its text (reasoning and tool fragments are ignored).
pub async fn complete(
    client: &LlmClient,
    messages: &[ChatMessage],
) -> Result<String, tomo_llm::LlmError> {
    client.complete(messages).await
}

pub async fn extract(
    client: &LlmClient,
    user_text: &str,
    assistant_text: &str,
    related: &[Fact],
) -> Result<Extraction, ExtractError> {
    let answer = complete(
        client,
        &extraction_messages(user_text, assistant_text, related),
    )
    .await?;
    parse_extraction(&answer)
}

impl Extraction {
    /// Drops what is not a fact about the user, as small models write it anyway: the character's own
    /// answer copied as a "fact" ("Cats are fascinating creatures…"), an English sentence about
    /// something else ("The time is 21:36"), though the instructions ask for sentences about "The
    /// user", or one about the user that nothing the user said holds up ("The user is currently 5:32
    /// PM on Friday", from the character's answer to "What time is it?"). Every kept fact is evaluated
    /// again on each turn it is recalled, so junk costs the user time as well as the model's
    /// attention. Facts in other scripts are kept: the rules are English.
    pub fn about_the_user(mut self, user_text: &str, assistant_text: &str) -> Self {
        let keep = |fact: &String| about_the_user(fact, user_text, assistant_text);
        self.add.retain(keep);
        self.supersede.retain(|(_, fact)| keep(fact));
        self
    }
}

fn about_the_user(fact: &str, user_text: &str, assistant_text: &str) -> bool {
    let fact_plain = plain(fact);
    if fact_plain.chars().count() >= 20 && plain(assistant_text).contains(&fact_plain) {
        return false;
    }
    if !fact.is_ascii() {
        return true;
    }
    let names_the_user = fact_plain
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '\'')
        .any(|word| matches!(word, "user" | "users" | "user's"));
    names_the_user && said_by_the_user(&fact_plain, user_text)
}

/// A statement compared whatever its spacing, case or final full stop.
pub(crate) fn plain(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches('.')
        .trim_end()
        .to_lowercase()
}

/// Words of a fact that say nothing of what it is about, besides the search's stop words.
const FACT_FILLER: &[&str] = &[
    "users",
    "are",
    "his",
    "her",
    "themselves",
    "likes",
    "wants",
    "want",
    "currently",
    "also",
    "very",
    "some",
];

/// At least one word of the fact that says what it is about comes from the user's words (compared
/// by their first four letters: "cats" and "cat", "moved" and "move"; numbers whole: "34"). Only
/// when the user spoke English: an English fact from "我养了一只猫" or "Ich habe eine Katze" shares no
/// word with it.
fn said_by_the_user(fact_plain: &str, user_text: &str) -> bool {
    if !mostly_english(user_text) {
        return true;
    }
    let stem = |word: &str| word.chars().take(4).collect::<String>();
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .map(str::to_lowercase)
            .filter(|w| {
                let number = !w.is_empty() && w.chars().all(|c| c.is_ascii_digit());
                (number || w.chars().count() >= 3)
                    && !STOP_WORDS.contains(&w.as_str())
                    && !FACT_FILLER.contains(&w.as_str())
            })
            .collect()
    };
    let said: Vec<String> = words(user_text).iter().map(|w| stem(w)).collect();
    words(fact_plain).iter().any(|w| said.contains(&stem(w)))
}

/// Nearly all letters ASCII and one of the commonest English words there: German or French in ASCII
/// letters is not judged.
fn mostly_english(text: &str) -> bool {
    const COMMON: &[&str] = &[
        "i", "i'm", "my", "me", "the", "a", "an", "is", "am", "are", "you", "it", "to", "and",
        "of", "in", "what", "can", "do", "have", "was", "we", "your", "that", "this", "for", "on",
        "with",
    ];
    let (ascii, letters) = text
        .chars()
        .filter(|c| c.is_alphabetic())
        .fold((0usize, 0usize), |(ascii, all), c| {
            (ascii + usize::from(c.is_ascii()), all + 1)
        });
    ascii * 10 >= letters * 9
        && text
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .map(str::to_lowercase)
            .any(|w| COMMON.contains(&w.as_str()))
}

/// Lenient parse of the extractor's answer.
pub fn parse_extraction(answer: &str) -> Result<Extraction, ExtractError> {
    let malformed = |reason: &str| ExtractError::Malformed {
        reason: reason.to_owned(),
        answer: answer.chars().take(300).collect(),
    };
    // Models wrap JSON in ```json fences, a sentence, or both, and small ones stop mid-object.
    let value = find_json(answer).ok_or_else(|| malformed("no JSON object"))?;
    // A bare list of facts (small models drop the wrapper object).
    if let Value::Array(items) = &value {
        return Ok(Extraction {
            add: items.iter().filter_map(fact_text).collect(),
            supersede: Vec::new(),
        });
    }
    let object = value
        .as_object()
        .ok_or_else(|| malformed("not an object"))?;
    let mut out = Extraction::default();
    if let Some(add) = object.get("add") {
        let items = add
            .as_array()
            .ok_or_else(|| malformed("`add` is not a list"))?;
        out.add = items.iter().filter_map(fact_text).collect();
    }
    if let Some(supersede) = object.get("supersede").or_else(|| object.get("update")) {
        let items = supersede
            .as_array()
            .ok_or_else(|| malformed("`supersede` is not a list"))?;
        for item in items {
            let id = item.get("id").and_then(|id| {
                id.as_i64()
                    .or_else(|| id.as_str().and_then(|s| s.trim().parse().ok()))
            });
            match (id, fact_text(item)) {
                (Some(id), Some(fact)) => out.supersede.push((id, fact)),
                _ => {
                    tracing::warn!(%item, "fact extraction: skipping a supersede item without id and fact")
                }
            }
        }
    }
    Ok(out)
}

/// The extraction inside `answer`: the first JSON value (from any `{` or `[`) that has the answer's keys
/// (`add`, `supersede`, `update`) or is a list; else the first object; else an object cut off at the end
/// (closed here). Prose, fences, `[joy]` tags and further JSON around it are skipped.
fn find_json(answer: &str) -> Option<Value> {
    let mut first_object = None;
    for (start, c) in answer.char_indices() {
        if c != '{' && c != '[' {
            continue;
        }
        let Some(Ok(value)) = serde_json::Deserializer::from_str(&answer[start..])
            .into_iter::<Value>()
            .next()
        else {
            continue;
        };
        match &value {
            Value::Object(map)
                if ["add", "supersede", "update"]
                    .iter()
                    .any(|k| map.contains_key(*k)) =>
            {
                return Some(value);
            }
            Value::Array(items)
                if !items.is_empty() && items.iter().all(|i| fact_text(i).is_some()) =>
            {
                return Some(value);
            }
            Value::Object(_) if first_object.is_none() => first_object = Some(value),
            _ => {}
        }
    }
    first_object.or_else(|| truncated_object(answer))
}

/// `{"add": ["The user has a cat` (the token limit hit): close the string and the brackets.
fn truncated_object(answer: &str) -> Option<Value> {
    let start = answer.find('{')?;
    let text = answer[start..].trim_end();
    if !text.contains("\"add\"") && !text.contains("\"supersede\"") {
        return None;
    }
    let (mut in_string, mut escaped, mut open) = (false, false, Vec::new());
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => open.push('}'),
            '[' => open.push(']'),
            '}' | ']' => {
                open.pop();
            }
            _ => {}
        }
    }
    let mut repaired = text.to_owned();
    if in_string {
        repaired.push('"');
    }
    let trimmed = repaired.trim_end().trim_end_matches(',').len();
    repaired.truncate(trimmed);
    repaired.extend(open.iter().rev());
    serde_json::from_str(&repaired).ok()
}

/// A fact given as `"text"` or `{"fact": "text"}`; blank facts are dropped.
fn fact_text(item: &Value) -> Option<String> {
    let text = match item {
        Value::String(s) => s.as_str(),
        Value::Object(map) => map
            .get("fact")
            .or_else(|| map.get("text"))
            .and_then(Value::as_str)?,
        _ => return None,
    };
    let text = without_dates(text.trim());
    (!text.is_empty()).then(|| text.to_owned())
}

/// The fact without dates copied from the stored facts' listing: `The user likes tea. (2026-12-03)`,
/// or `(learned 2026-12-03)` as the listing writes it.
fn without_dates(mut text: &str) -> &str {
    while let Some(rest) = text.strip_suffix(')')
        && let Some((before, inside)) = rest.rsplit_once('(')
        && is_date(inside.trim().trim_start_matches("learned").trim())
    {
        text = before.trim_end();
    }
    text
}

fn is_date(text: &str) -> bool {
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn only_facts_about_the_user_are_kept() {
        let answer = r#"{"add": [
            "The user's cat is called Mochi.",
            "The user has a cat.",
            "Cats are fascinating creatures with unique personalities.",
            "The time is Thursday, 3 December 2026 at 21:36 local time",
            "用户的猫叫小白。",
            "The User lives in Berlin."
        ], "supersede": [{"id": 3, "fact": "Dogs are loyal."}, {"id": 4, "fact": "The user moved to Paris."}]}"#;
        let user = "My cat Mochi loves cats; I moved to Berlin, then Paris. 我的猫叫小白。";
        let said =
            "[joy] Cats are fascinating creatures with unique personalities.  They love to play.";
        let kept = parse_extraction(answer).unwrap().about_the_user(user, said);
        assert_eq!(
            kept.add,
            vec![
                "The user's cat is called Mochi.",
                "The user has a cat.",
                "用户的猫叫小白。",
                "The User lives in Berlin."
            ]
        );
        assert_eq!(
            kept.supersede,
            vec![(4, "The user moved to Paris.".to_owned())]
        );
        // A short fact that happens to be in the answer is still the user's.
        let echoed = parse_extraction(r#"{"add": ["The user has a cat."]}"#)
            .unwrap()
            .about_the_user("I have a cat.", "I know the user has a cat.");
        assert_eq!(echoed.add, vec!["The user has a cat."]);
    }

    #[test]
    fn a_fact_about_the_user_needs_the_users_own_words() {
        // What Qwen2.5-Coder-1.5B stored after "What time is it right now?" and a water reminder.
        let answer = r#"{"add": [
            "The user is currently 5:32 PM on Friday, December 4th, 2026.",
            "The user likes water",
            "The user wants to be reminded to drink water."
        ]}"#;
        let kept = parse_extraction(answer).unwrap().about_the_user(
            "What time is it right now?",
            "It is currently 5:32 PM on Friday.",
        );
        assert!(kept.add.is_empty(), "{:?}", kept.add);
        let kept = parse_extraction(answer).unwrap().about_the_user(
            "Can you remind me to drink some water?",
            "Sure! Drinking water keeps you fresh.",
        );
        assert_eq!(
            kept.add,
            vec![
                "The user likes water",
                "The user wants to be reminded to drink water."
            ]
        ); // Numbers are words too, and a user who spoke another language is not judged by English.
        let age = r#"{"add": ["The user is 34 years old."]}"#;
        let kept = parse_extraction(age)
            .unwrap()
            .about_the_user("I turned 34 today!", "Happy birthday!");
        assert_eq!(kept.add, vec!["The user is 34 years old."]);
        let cat = r#"{"add": ["The user has a cat."]}"#;
        for user in ["我养了一只猫。", "Ich habe eine Katze."] {
            let kept = parse_extraction(cat).unwrap().about_the_user(user, "");
            assert_eq!(kept.add, vec!["The user has a cat."], "{user}");
        }
    }

    #[test]
    fn dates_copied_from_the_listing_are_not_part_of_a_fact() {
        let answer = r#"{"add": ["The user asks for water reminders (learned 2026-12-03)"],
            "supersede": [{"id": 2, "fact": "The user likes cats. (2026-12-03) (2026-12-02)"}]}"#;
        let parsed = parse_extraction(answer).unwrap();
        assert_eq!(parsed.add, vec!["The user asks for water reminders"]);
        assert_eq!(
            parsed.supersede,
            vec![(2, "The user likes cats.".to_owned())]
        );
        // Other parentheses are the fact's own.
        let kept = r#"{"add": ["The user works at ACME (since 2019)", "(2026-12-03)"]}"#;
        assert_eq!(
            parse_extraction(kept).unwrap().add,
            vec!["The user works at ACME (since 2019)"]
        );
    }

    #[test]
    fn stored_facts_are_listed_with_the_date_first() {
        let fact = Fact {
            id: 7,
            agent_id: "hana".into(),
            fact: "The user likes tea.".into(),
            created_at: chrono::DateTime::parse_from_rfc3339("2026-12-03T10:00:00Z")
                .unwrap()
                .with_timezone(&chrono::Utc),
            source_turn: None,
            superseded_by: None,
        };
        let messages = extraction_messages("hi", "hello", &[fact]);
        let ChatMessage::User { content } = &messages[1] else {
            panic!("no user message: {messages:?}");
        };
        assert!(
            content.contains("- id 7 (learned 2026-12-03): The user likes tea.\n"),
            "{content}"
        );
    }

    #[test]
    fn parses_fenced_and_loose_answers() {
        let answer = "Sure!\n```json\n{\"add\": [\"The user has a cat named Miso.\", {\"fact\": \" \"}], \
                      \"supersede\": [{\"id\": \"3\", \"fact\": \"The user lives in Berlin.\"}, {\"id\": 4}]}\n```";
        let parsed = parse_extraction(answer).unwrap();
        assert_eq!(parsed.add, vec!["The user has a cat named Miso."]);
        assert_eq!(
            parsed.supersede,
            vec![(3, "The user lives in Berlin.".to_owned())]
        );
        assert!(parse_extraction("{}").unwrap().is_empty());
    }

    #[test]
    fn small_model_answers_with_extra_prose_json_and_cut_offs_are_read() {
        let cases = [
            // Prose with braces after the fence.
            (
                "```json\n{\"add\": [\"The user's name is Alex.\"], \"supersede\": []}\n```\nNote: {none}",
                vec!["The user's name is Alex."],
            ),
            // An emotion tag and a second object.
            (
                "[joy] Here you go: {\"add\": [\"The user has a cat called Mochi.\"]} {\"other\": 1}",
                vec!["The user has a cat called Mochi."],
            ),
            // A bare list.
            ("[\"The user likes tea.\"]", vec!["The user likes tea."]),
            // Cut off by the token limit.
            (
                "{\"add\": [\"The user is called Alex.\", \"The user has a cat",
                vec!["The user is called Alex.", "The user has a cat"],
            ),
        ];
        for (answer, facts) in cases {
            let parsed = parse_extraction(answer).unwrap_or_else(|e| panic!("{answer}: {e}"));
            assert_eq!(parsed.add, facts, "{answer}");
        }
    }

    #[test]
    fn rejects_nonsense() {
        for answer in ["I cannot do that.", "{\"add\": \"x\"}", "{oops}", "} {"] {
            assert!(
                matches!(
                    parse_extraction(answer),
                    Err(ExtractError::Malformed { .. })
                ),
                "{answer}"
            );
        }
    }
}
