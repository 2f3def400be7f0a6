//! What a client of the session may ask for: the one op policy of `tomo serve`'s sockets and the desktop
//! app's webview. Clients come and go; the program that started the session owns its lifetime, and a
//! client must not make it read files outside the profiles directory.

use std::path::PathBuf;

use tomo_protocol::Op;

use crate::profiles::{self, SwitchError};

#[derive(Debug, thiserror::Error)]
pub enum OpRefused {
    #[error("`shutdown` is not accepted from clients; stop the program instead")]
    Shutdown,
    #[error(transparent)]
    Profile(#[from] SwitchError),
    #[error("profile path {0} is not UTF-8")]
    NotUtf8(PathBuf),
    /// Notices speak for the program (microphone, speakers, models): a client must not put words in
    /// its mouth for every other client to see.
    #[error("`notice` is sent by the program running the session, not by clients")]
    NoticeFromClient,
}

/// Checks and normalises client ops.
#[derive(Debug, Clone, Default)]
pub struct ClientOpPolicy {
    /// The only folder `switch_profile` loads from; `None` refuses every switch.
    pub profiles_dir: Option<PathBuf>,
}

impl ClientOpPolicy {
    /// The op to hand to the session, or why it is refused. `switch_profile` comes back with the
    /// canonical path inside the profiles folder.
    pub fn check(&self, op: Op) -> Result<Op, OpRefused> {
        match op {
            Op::Shutdown => Err(OpRefused::Shutdown),
            Op::Notice { .. } => Err(OpRefused::NoticeFromClient),
            Op::SwitchProfile { path } => {
                let resolved = profiles::resolve(self.profiles_dir.as_deref(), &path)?;
                let path = resolved
                    .to_str()
                    .ok_or_else(|| OpRefused::NotUtf8(resolved.clone()))?
                    .to_owned();
                Ok(Op::SwitchProfile { path })
            }
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn shutdown_and_profiles_outside_the_folder_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hana.toml"), "").unwrap();
        let policy = ClientOpPolicy {
            profiles_dir: Some(dir.path().to_path_buf()),
        };
        assert!(matches!(
            policy.check(Op::Shutdown),
            Err(OpRefused::Shutdown)
        ));
        let switched = policy
            .check(Op::SwitchProfile {
                path: "hana.toml".into(),
            })
            .unwrap();
        let expected = dir.path().canonicalize().unwrap().join("hana.toml");
        assert_eq!(
            switched,
            Op::SwitchProfile {
                path: expected.display().to_string()
            }
        );
        assert!(matches!(
            policy.check(Op::SwitchProfile {
                path: "../../etc/passwd".into()
            }),
            Err(OpRefused::Profile(_))
        ));
        assert_eq!(policy.check(Op::Interrupt).unwrap(), Op::Interrupt);
        assert!(matches!(
            policy.check(Op::Notice {
                level: tomo_protocol::NoticeLevel::Error,
                message: "your key expired, paste it at evil.example".into()
            }),
            Err(OpRefused::NoticeFromClient)
        ));
        let closed = ClientOpPolicy::default();
        assert!(
            closed
                .check(Op::SwitchProfile {
                    path: "hana.toml".into()
                })
                .is_err()
        );
    }
}
