//! Which KV-cache slot a request takes: the one already holding the longest real prefix of its prompt,
//! else the least recently used, never the one a side request standing still holds.

use llama_cpp_2::token::LlamaToken;

#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// Tokens whose keys and values are in this slot's cache, from position 0.
    pub(crate) tokens: Vec<LlamaToken>,
    pub(crate) last_used: u64,
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A shared prefix shorter than this is only the template's opening (`<|im_start|>system\n`), not a
/// conversation worth keeping.
const MIN_REUSE: usize = 32;

/// The slot whose cache shares the longest prefix with `tokens`, if that prefix is a real one
/// ([`MIN_REUSE`] tokens); otherwise the least recently used slot, so a side request (memory extraction,
/// a summary) never evicts the conversation just because both start with the same template header.
/// Returns the slot and how many of its tokens match. The `busy` slot (a side request standing still) is
/// never chosen.
pub(crate) fn choose_slot(
    slots: &[Slot],
    tokens: &[LlamaToken],
    busy: Option<usize>,
) -> (usize, usize) {
    let shared: Vec<usize> = slots
        .iter()
        .map(|slot| common_prefix(&slot.tokens, tokens))
        .collect();
    let free = || {
        slots
            .iter()
            .enumerate()
            .filter(|(index, _)| Some(*index) != busy)
    };
    let longest = free()
        .max_by_key(|(index, slot)| (shared[*index], std::cmp::Reverse(slot.last_used)))
        .map_or(0, |(index, _)| index);
    if shared.get(longest).copied().unwrap_or(0) >= MIN_REUSE {
        return (longest, shared[longest]);
    }
    let oldest = free()
        .min_by_key(|(_, slot)| slot.last_used)
        .map_or(0, |(index, _)| index);
    (oldest, shared.get(oldest).copied().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(tokens: &[i32], last_used: u64) -> Slot {
        Slot {
            tokens: tokens.iter().copied().map(LlamaToken::new).collect(),
            last_used,
        }
    }

    fn tokens(range: std::ops::Range<i32>) -> Vec<LlamaToken> {
        range.map(LlamaToken::new).collect()
    }

    #[test]
    fn the_conversation_keeps_its_slot_and_side_requests_take_the_other() {
        let header: Vec<i32> = (0..3).collect();
        let conversation: Vec<i32> = (0..200).collect();
        let slots = [slot(&conversation, 5), slot(&[], 0)];
        // The next turn of the conversation: its slot.
        assert_eq!(choose_slot(&slots, &tokens(0..230), None), (0, 200));
        // Memory extraction starts with the same template header only: the unused slot, not the chat's.
        let mut side = header.clone();
        side.extend(900..950);
        let side: Vec<LlamaToken> = side.into_iter().map(LlamaToken::new).collect();
        assert_eq!(choose_slot(&slots, &side, None).0, 1);
        // Later, with the side request in slot 1: the next side request reuses it, the chat keeps 0.
        let slots = [
            slot(&conversation, 5),
            slot(&(0..3).chain(900..950).collect::<Vec<_>>(), 6),
        ];
        assert_eq!(choose_slot(&slots, &side, None), (1, 53));
        assert_eq!(choose_slot(&slots, &tokens(0..230), None), (0, 200));
        // Something new: the least recently used slot.
        assert_eq!(choose_slot(&slots, &tokens(5000..5100), None).0, 0);
    }

    #[test]
    fn a_side_request_standing_still_keeps_its_slot() {
        let conversation: Vec<i32> = (0..200).collect();
        // A side request took the conversation's slot (its prompt is new and slot 0 was the older one)
        // and stopped for the next turn: the turn starts afresh in the other slot.
        let slots = [slot(&[900, 901, 902], 7), slot(&conversation[..40], 6)];
        assert_eq!(choose_slot(&slots, &tokens(0..230), Some(0)), (1, 40));
        // With its own slot busy and nothing shared elsewhere, the other slot still.
        let slots = [slot(&conversation, 7), slot(&[900], 6)];
        assert_eq!(choose_slot(&slots, &tokens(0..230), Some(0)), (1, 0));
        assert_eq!(choose_slot(&slots, &tokens(0..230), None), (0, 200));
    }
}
