//! The microphone switches follow the session.

use super::*;

#[test]
fn the_switches_follow_the_sessions_state_and_mute() {
    let flags = ListenFlags::default();
    flags.follow(&Event::StateChanged {
        from: SessionState::Thinking,
        to: SessionState::Speaking,
    });
    assert!(flags.speaking.load(Ordering::SeqCst));
    flags.follow(&Event::ModeChanged {
        mic_muted: true,
        do_not_disturb: false,
        push_to_talk: false,
        half_duplex: true,
    });
    assert!(flags.muted.load(Ordering::SeqCst));
    flags.follow(&Event::StateChanged {
        from: SessionState::Speaking,
        to: SessionState::Idle,
    });
    flags.follow(&Event::ModeChanged {
        mic_muted: false,
        do_not_disturb: true,
        push_to_talk: false,
        half_duplex: true,
    });
    assert!(!flags.speaking.load(Ordering::SeqCst));
    assert!(!flags.muted.load(Ordering::SeqCst));
}

fn mode(flags: &ListenFlags, muted: bool, push_to_talk: bool) {
    flags.follow(&Event::ModeChanged {
        mic_muted: muted,
        do_not_disturb: false,
        push_to_talk,
        half_duplex: true,
    });
}

fn speaking(flags: &ListenFlags, on: bool) {
    let to = if on {
        SessionState::Speaking
    } else {
        SessionState::Idle
    };
    flags.follow(&Event::StateChanged {
        from: SessionState::Thinking,
        to,
    });
}

#[test]
fn push_to_talk_listens_only_while_held_and_may_interrupt_the_character() {
    let flags = ListenFlags::default();
    assert_eq!(flags.wanted(), (ListenMode::HandsFree, false));
    speaking(&flags, true);
    assert_eq!(flags.wanted(), (ListenMode::Muted, false), "half-duplex");
    mode(&flags, false, true);
    assert_eq!(flags.wanted(), (ListenMode::PushToTalk, false));
    flags.follow(&Event::PushToTalk { pressed: true });
    assert_eq!(
        flags.wanted(),
        (ListenMode::PushToTalk, true),
        "held while it speaks"
    );
    speaking(&flags, false);
    flags.follow(&Event::PushToTalk { pressed: false });
    assert_eq!(flags.wanted(), (ListenMode::PushToTalk, false));
    flags.follow(&Event::PushToTalk { pressed: true });
    mode(&flags, true, true);
    assert_eq!(flags.wanted(), (ListenMode::Muted, false), "mute wins");
    mode(&flags, false, false);
    assert_eq!(flags.wanted(), (ListenMode::HandsFree, false));
    assert!(
        !flags.ptt_pressed.load(Ordering::SeqCst),
        "leaving the mode releases"
    );
}

#[test]
fn full_duplex_keeps_listening_while_the_character_speaks() {
    let flags = ListenFlags::default();
    speaking(&flags, true);
    assert_eq!(
        flags.wanted(),
        (ListenMode::Muted, false),
        "half-duplex until told"
    );
    flags.follow(&Event::ModeChanged {
        mic_muted: false,
        do_not_disturb: false,
        push_to_talk: false,
        half_duplex: false,
    });
    assert_eq!(flags.wanted(), (ListenMode::HandsFree, false));
}
