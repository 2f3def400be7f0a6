//! A short memory of lines already seen, so text that flickers, scrolls back or is re-read by a forced
//! capture is reported once.
//!
//! Lines are compared after normalisation (whitespace removed: OCR puts spaces inconsistently, and Chinese
//! has none) and fuzzily (edit distance ≤ `max_distance_ratio` of the length), because re-reading the same
//! pixels can flip a character or two (`l`/`1`, `O`/`0`). Every sighting refreshes a line, so text that
//! stays on screen stays known; a line not seen for `ttl_ms` is forgotten.

use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct LineMemory {
    /// Normalised line → last time it was seen (ms).
    seen: HashMap<String, u64>,
    pub ttl_ms: u64,
    pub capacity: usize,
    pub max_distance_ratio: f32,
}

impl Default for LineMemory {
    fn default() -> Self {
        Self::new(10 * 60 * 1000, 1024)
    }
}

impl LineMemory {
    pub fn new(ttl_ms: u64, capacity: usize) -> Self {
        Self {
            seen: HashMap::new(),
            ttl_ms,
            capacity: capacity.max(1),
            max_distance_ratio: 0.2,
        }
    }

    /// The lines of `lines` that are new (not seen recently), in order, each once; remembers all of them.
    pub fn filter_new<'a>(
        &mut self,
        lines: impl IntoIterator<Item = &'a str>,
        now_ms: u64,
    ) -> Vec<String> {
        self.seen
            .retain(|_, at| now_ms.saturating_sub(*at) <= self.ttl_ms);
        let mut fresh = Vec::new();
        for line in lines {
            let key = normalize(line);
            if key.is_empty() {
                continue;
            }
            let known = self.find(&key);
            match known {
                Some(existing) => {
                    if let Some(at) = self.seen.get_mut(&existing) {
                        *at = now_ms;
                    }
                }
                None => {
                    self.remember(key, now_ms);
                    fresh.push(collapse_whitespace(line));
                }
            }
        }
        fresh
    }

    pub fn clear(&mut self) {
        self.seen.clear();
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    fn find(&self, key: &str) -> Option<String> {
        if self.seen.contains_key(key) {
            return Some(key.to_string());
        }
        let chars: Vec<char> = key.chars().collect();
        self.seen
            .keys()
            .find(|other| {
                let other: Vec<char> = other.chars().collect();
                let longest = chars.len().max(other.len());
                let allowed = (longest as f32 * self.max_distance_ratio).floor() as usize;
                allowed > 0
                    && chars.len().abs_diff(other.len()) <= allowed
                    && levenshtein(&chars, &other) <= allowed
            })
            .cloned()
    }

    fn remember(&mut self, key: String, now_ms: u64) {
        if self.seen.len() >= self.capacity
            && let Some(oldest) = self
                .seen
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| k.clone())
        {
            self.seen.remove(&oldest);
        }
        self.seen.insert(key, now_ms);
    }
}

/// The comparison key: no whitespace at all.
pub fn normalize(line: &str) -> String {
    line.chars().filter(|c| !c.is_whitespace()).collect()
}

/// What is reported: runs of whitespace become one space, ends trimmed.
pub fn collapse_whitespace(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn levenshtein(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_and_whitespace_variants_are_reported_once() {
        let mut memory = LineMemory::default();
        assert_eq!(
            memory.filter_new(["Hello  world", "第二行"], 0),
            ["Hello world", "第二行"]
        );
        assert!(
            memory
                .filter_new(["Hello world", " 第二 行 "], 1000)
                .is_empty()
        );
        assert_eq!(
            memory.filter_new(["Hello world", "New line"], 2000),
            ["New line"]
        );
    }

    #[test]
    fn ocr_flicker_of_a_character_counts_as_the_same_line() {
        let mut memory = LineMemory::default();
        memory.filter_new(["The quick brown fox jumps"], 0);
        assert!(
            memory
                .filter_new(["The quick brown f0x jumps"], 10)
                .is_empty()
        );
        // A different line of similar length is new.
        assert_eq!(
            memory.filter_new(["A lazy dog sleeps all day"], 20),
            ["A lazy dog sleeps all day"]
        );
        // Short lines must match exactly (one character is already 20 %+).
        memory.filter_new(["ok"], 30);
        assert_eq!(memory.filter_new(["on"], 40), ["on"]);
    }

    #[test]
    fn lines_are_forgotten_after_the_ttl_unless_seen_again() {
        let mut memory = LineMemory::new(1000, 16);
        memory.filter_new(["kept on screen", "gone"], 0);
        assert!(memory.filter_new(["kept on screen"], 900).is_empty());
        assert_eq!(
            memory.filter_new(["kept on screen", "gone"], 1800),
            ["gone"]
        );
    }

    #[test]
    fn capacity_evicts_the_oldest() {
        let mut memory = LineMemory::new(u64::MAX, 2);
        memory.filter_new(["alpha one"], 0);
        memory.filter_new(["beta two"], 1);
        memory.filter_new(["gamma three"], 2);
        assert_eq!(memory.len(), 2);
        assert_eq!(memory.filter_new(["alpha one"], 3), ["alpha one"]);
    }
}
