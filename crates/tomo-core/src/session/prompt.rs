//! Builds the messages of a request: system prompt from the persona, bounded history, and the user
//! message carrying the `[memory context]` block. Hook output never goes into the system prompt: it is
//! data about this turn, and keeping the system prompt stable keeps server-side prompt caches warm.

use tomo_llm::ChatMessage;

pub fn system_prompt(persona: &str, character_name: &str, emotions: &[String]) -> String {
    let mut prompt = persona.trim().to_owned();
    let tags: Vec<String> = emotions.iter().map(|e| format!("[{e}]")).collect();
    // Personas written for Tomo usually explain their tags already; add the rule only when they do not.
    let explained = tags.iter().all(|tag| prompt.contains(tag.as_str()));
    if !tags.is_empty() && !explained {
        prompt.push_str(&format!(
            "\n\nYou are {character_name}. Your words are spoken aloud: answer in short, natural sentences \
             without markdown. To show a feeling, put one of these tags before a sentence: {}.",
            tags.join(" ")
        ));
    }
    prompt
}

/// Where the hooks' block starts and ends in the user message.
pub const CONTEXT_OPEN: &str = "[memory context]";
pub const CONTEXT_CLOSE: &str = "[/memory context]";

/// The user message as sent: the memory blocks (if any) first, then the user's words.
pub fn user_message(user_text: &str, memory_blocks: &[String]) -> String {
    if memory_blocks.is_empty() {
        return user_text.to_owned();
    }
    format!(
        "{CONTEXT_OPEN}\n{}\n{CONTEXT_CLOSE}\n\n{user_text}",
        memory_blocks.join("\n\n")
    )
}

pub fn build_messages(
    system: &str,
    history: Vec<ChatMessage>,
    user_text: &str,
    memory_blocks: &[String],
) -> Vec<ChatMessage> {
    let mut messages = Vec::with_capacity(history.len() + 2);
    messages.push(ChatMessage::system(system));
    messages.extend(history);
    messages.push(ChatMessage::user(user_message(user_text, memory_blocks)));
    messages
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn memory_goes_into_the_user_message_only() {
        let messages = build_messages(
            "You are Hana.",
            vec![],
            "what did I say?",
            &["The user likes tea.".to_owned()],
        );
        let ChatMessage::System { content: system } = &messages[0] else {
            panic!("first message is not system");
        };
        assert!(!system.contains("memory context"));
        let ChatMessage::User { content } = &messages[1] else {
            panic!("last message is not user");
        };
        assert!(content.starts_with("[memory context]\nThe user likes tea.\n[/memory context]"));
        assert!(content.ends_with("what did I say?"));
    }

    #[test]
    fn emotion_tags_are_explained_once() {
        let tags = vec!["joy".to_owned(), "sad".to_owned()];
        let added = system_prompt("You are Hana.", "Hana", &tags);
        assert!(added.contains("[joy] [sad]"), "{added}");
        let persona = "You are Hana. Use [joy] or [sad] before a sentence.";
        assert_eq!(system_prompt(persona, "Hana", &tags), persona);
        assert_eq!(system_prompt("You are Hana.", "Hana", &[]), "You are Hana.");
    }

    #[test]
    fn no_block_without_memory() {
        assert_eq!(user_message("hi", &[]), "hi");
    }
}
