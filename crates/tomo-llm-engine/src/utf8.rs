//! Token pieces are bytes, and one character (an emoji, a CJK ideograph) can span two tokens: send only
//! whole characters, keep the rest for the next piece.

#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// The complete characters so far; an incomplete one at the end waits. Invalid bytes become U+FFFD.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(error) => {
                    let valid = error.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match error.error_len() {
                        // Incomplete at the end: wait for the next piece.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// What is left at the end of the answer (an incomplete character, shown as U+FFFD).
    pub fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_character_split_across_pieces_comes_out_whole() {
        let mut stream = Utf8Stream::default();
        let heart = "💖".as_bytes();
        assert_eq!(stream.push(b"Hi "), "Hi ");
        assert_eq!(stream.push(&heart[..2]), "");
        assert_eq!(stream.push(&heart[2..]), "💖");
        assert_eq!(stream.push("日本".as_bytes()), "日本");
        assert_eq!(stream.finish(), "");
    }

    #[test]
    fn invalid_bytes_are_replaced_and_a_dangling_start_is_flushed_at_the_end() {
        let mut stream = Utf8Stream::default();
        assert_eq!(stream.push(&[b'a', 0xff, b'b']), "a\u{fffd}b");
        assert_eq!(stream.push(&[0xe6, 0x97]), "");
        assert_eq!(stream.finish(), "\u{fffd}");
    }
}
