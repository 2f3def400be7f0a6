//! The conversation state machine. Only the session coordinator owns one; every change goes through
//! [`StateMachine::go`], so an illegal transition is an error, never a silent overwrite.

use tomo_protocol::SessionState;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal state transition {from:?} -> {to:?}")]
pub struct IllegalTransition {
    pub from: SessionState,
    pub to: SessionState,
}

#[derive(Debug)]
pub struct StateMachine {
    state: SessionState,
}

impl Default for StateMachine {
    fn default() -> Self {
        Self {
            state: SessionState::Idle,
        }
    }
}

impl StateMachine {
    pub fn state(&self) -> SessionState {
        self.state
    }

    /// Whether `from -> to` is allowed. Spelled out pair by pair on purpose.
    pub fn allowed(from: SessionState, to: SessionState) -> bool {
        use SessionState::{Idle, Listening, Speaking, Thinking};
        matches!(
            (from, to),
            (Idle, Listening)
                | (Idle, Thinking)
                | (Listening, Idle)
                | (Listening, Thinking)
                | (Thinking, Speaking)
                | (Thinking, Idle)
                | (Thinking, Listening)
                | (Speaking, Thinking)
                | (Speaking, Idle)
                | (Speaking, Listening)
        )
    }

    pub fn go(&mut self, to: SessionState) -> Result<SessionState, IllegalTransition> {
        let from = self.state;
        if !Self::allowed(from, to) {
            return Err(IllegalTransition { from, to });
        }
        self.state = to;
        Ok(from)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use SessionState::*;

    #[test]
    fn a_text_turn_walks_idle_thinking_speaking_idle() {
        let mut machine = StateMachine::default();
        assert_eq!(machine.go(Thinking), Ok(Idle));
        assert_eq!(machine.go(Speaking), Ok(Thinking));
        assert_eq!(machine.go(Idle), Ok(Speaking));
        assert_eq!(machine.state(), Idle);
    }

    #[test]
    fn illegal_transitions_are_errors_and_leave_the_state_alone() {
        let mut machine = StateMachine::default();
        assert_eq!(
            machine.go(Speaking),
            Err(IllegalTransition {
                from: Idle,
                to: Speaking
            })
        );
        assert_eq!(
            machine.go(Idle),
            Err(IllegalTransition {
                from: Idle,
                to: Idle
            })
        );
        assert_eq!(machine.state(), Idle);
        machine.go(Listening).unwrap();
        assert!(machine.go(Speaking).is_err());
        assert_eq!(machine.state(), Listening);
    }
}
