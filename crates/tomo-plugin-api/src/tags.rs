//! Tags a plugin reads from the model's text: `[key:value]` (e.g. mood_chat's `[mood:+10]`). The token
//! pipeline removes a tag whose key a plugin of the character claims and whose value that plugin
//! accepts, and hands it on as [`tomo_protocol::Action::Tag`] with the sentence it was in; the plugin
//! sees the sentence among the session's events. Any other bracket text stays ordinary text.

/// A tag key a plugin claims. Two specs are the same when their keys are.
#[derive(Debug, Clone, Copy)]
pub struct TagSpec {
    /// Matched case-insensitively; actions carry it as written here.
    pub key: &'static str,
    /// Whether `value` (trimmed) is a value of this tag; a rejected tag stays in the text.
    pub accepts: fn(&str) -> bool,
}

impl PartialEq for TagSpec {
    fn eq(&self, other: &Self) -> bool {
        self.key.eq_ignore_ascii_case(other.key)
    }
}

impl Eq for TagSpec {}

impl TagSpec {
    /// The tag's value if `inner` (the text between the brackets) is `key:value` with an accepted value.
    pub fn read<'a>(&self, inner: &'a str) -> Option<&'a str> {
        let (key, value) = inner.trim().split_once(':')?;
        let value = value.trim();
        (key.trim().eq_ignore_ascii_case(self.key) && (self.accepts)(value)).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_its_own_key_and_accepted_values() {
        let spec = TagSpec {
            key: "mood",
            accepts: |value| value.parse::<i32>().is_ok(),
        };
        assert_eq!(spec.read(" Mood: -5 "), Some("-5"));
        assert_eq!(spec.read("mood:up"), None);
        assert_eq!(spec.read("note:1"), None);
        assert_eq!(spec.read("mood"), None);
    }
}
