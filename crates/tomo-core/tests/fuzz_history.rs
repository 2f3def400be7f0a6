//! Fuzzing the history reader with proptest: a `history.jsonl` torn, spliced or sprinkled with garbage
//! (what crashes, full disks and concurrent writers leave) always opens, and the next record appended
//! is read back intact, after every record that was readable before.
//! `PROPTEST_CASES=2000 cargo test -p tomo-core --test fuzz_history` runs longer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use tomo_core::history::{History, HistoryRecord};
use tomo_llm::ChatMessage;

fn record(turn_id: u64, text: &str) -> HistoryRecord {
    HistoryRecord {
        turn_id,
        at: Utc
            .timestamp_opt(1_800_000_000 + turn_id as i64, 0)
            .unwrap(),
        message: if turn_id.is_multiple_of(2) {
            ChatMessage::assistant(text)
        } else {
            ChatMessage::user(text)
        },
        interrupted: false,
        proactive: false,
    }
}

#[derive(Debug, Clone)]
enum Damage {
    /// The file ends at this byte (a torn last write).
    Truncate(usize),
    /// These bytes appear at this position (another writer, a bad sector).
    Insert(usize, Vec<u8>),
    /// One byte changes.
    Flip(usize, u8),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<usize>().prop_map(Damage::Truncate),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 0..24)
        )
            .prop_map(|(at, bytes)| Damage::Insert(at, bytes)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Damage::Flip(at, b)),
    ]
}

fn apply(bytes: &mut Vec<u8>, damage: &[Damage]) {
    for d in damage {
        let len = bytes.len();
        match d {
            Damage::Truncate(at) => bytes.truncate(at % (len + 1)),
            Damage::Insert(at, more) => {
                let at = at % (len + 1);
                bytes.splice(at..at, more.iter().copied());
            }
            Damage::Flip(at, b) if len > 0 => bytes[at % len] = *b,
            Damage::Flip(..) => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_damaged_history_opens_and_takes_the_next_record_intact(
        texts in proptest::collection::vec("\\PC{0,40}", 1..8),
        damage in proptest::collection::vec(damage(), 1..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let originals: Vec<HistoryRecord> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| record(i as u64 + 1, t))
            .collect();
        {
            let mut history = History::open(dir.path()).unwrap();
            history.append(originals.clone()).unwrap();
        }
        let path = dir.path().join("history.jsonl");
        let mut bytes = std::fs::read(&path).unwrap();
        apply(&mut bytes, &damage);
        std::fs::write(&path, &bytes).unwrap();

        let lines = bytes.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).count();
        let (before, next_id) = {
            let mut history = History::open(dir.path()).unwrap();
            prop_assert!(history.records().len() + history.skipped_lines <= lines);
            let before = history.records().to_vec();
            let next_id = history.next_turn_id();
            prop_assert!(before.iter().all(|r| r.turn_id < next_id));
            history.append(vec![record(next_id, "after the damage")]).unwrap();
            (before, next_id)
        };
        let history = History::open(dir.path()).unwrap();
        let after = history.records();
        prop_assert_eq!(after.last(), Some(&record(next_id, "after the damage")));
        // Nothing that was readable is lost by the append (it never glues onto a torn line).
        prop_assert_eq!(&after[..after.len() - 1], &before[..]);
    }
}
