//! When a fact was learned, as the `[memory context]` says it. Recent facts get a word ("today", "3 days
//! ago"), old ones their date. Why: the block is evaluated by the model on every turn while the user
//! waits, and a small local model reads each digit as a token of its own (Qwen2's tokenizer): a date is
//! ≈ 10 tokens, "today" one. Five facts with dates cost the embedded brain ≈ 0.7 s of prompt evaluation
//! per turn on two cores. Words are also what a small model reasons about more reliably than date
//! arithmetic. The label changes only at midnight, so consecutive turns keep sharing a cached prefix.

use chrono::{DateTime, Local, NaiveDate, Utc};

/// Facts older than this many days are labelled with their date.
const DATED_AFTER_DAYS: i64 = 60;

/// "today", "yesterday", "5 days ago", "3 weeks ago", or the date for anything older (or in the
/// future: a clock that went back).
pub fn label(learned: NaiveDate, today: NaiveDate) -> String {
    let days = (today - learned).num_days();
    match days {
        0 => "today".to_owned(),
        1 => "yesterday".to_owned(),
        2..=13 => format!("{days} days ago"),
        14..=DATED_AFTER_DAYS => format!("{} weeks ago", days / 7),
        _ => learned.format("%Y-%m-%d").to_string(),
    }
}

/// The line injected for one fact: `- 3 days ago: The user moved to Berlin.`
pub fn line(fact: &str, learned: Option<DateTime<Utc>>) -> String {
    match learned {
        Some(at) => {
            let today = Local::now().date_naive();
            let learned = at.with_timezone(&Local).date_naive();
            format!("- {}: {fact}", label(learned, today))
        }
        None => format!("- {fact}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn recent_facts_are_labelled_in_words_and_old_ones_by_date() {
        let today = day(2026, 12, 3);
        assert_eq!(label(day(2026, 12, 3), today), "today");
        assert_eq!(label(day(2026, 12, 2), today), "yesterday");
        assert_eq!(label(day(2026, 11, 30), today), "3 days ago");
        assert_eq!(label(day(2026, 11, 20), today), "13 days ago");
        assert_eq!(label(day(2026, 11, 19), today), "2 weeks ago");
        assert_eq!(label(day(2026, 10, 4), today), "8 weeks ago");
        assert_eq!(label(day(2026, 10, 3), today), "2026-10-03");
        assert_eq!(label(day(2025, 12, 3), today), "2025-12-03");
        // A clock set back: the date, not "-1 days ago".
        assert_eq!(label(day(2026, 12, 4), today), "2026-12-04");
    }

    #[test]
    fn a_fact_learned_now_is_from_today() {
        assert_eq!(
            line("The user moved to Berlin.", Some(Utc::now())),
            "- today: The user moved to Berlin."
        );
        assert_eq!(line("The user has a cat.", None), "- The user has a cat.");
    }
}
