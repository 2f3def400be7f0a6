#![allow(clippy::unwrap_used)]
use super::*;

/// A profile that loads (the shipped Kuro, renamed), for a character named `name`.
fn profile(name: &str) -> String {
    let agent_id: String = name
        .to_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    include_str!("../../profiles/kuro.toml")
        .replacen("name = \"Kuro\"", &format!("name = \"{name}\""), 1)
        .replacen(
            "agent_id = \"kuro\"",
            &format!("agent_id = \"{agent_id}\""),
            1,
        )
}

struct Machine {
    _root: tempfile::TempDir,
    resources: PathBuf,
    config: PathBuf,
    data: PathBuf,
}

/// An installed app's resource folder (Hana and Kuro, plugin manifests) and a user's config and data folders.
fn machine() -> Machine {
    let root = tempfile::tempdir().unwrap();
    let resources = root.path().join("usr/lib/Tomo");
    std::fs::create_dir_all(resources.join("profiles")).unwrap();
    std::fs::create_dir_all(resources.join("plugins/time")).unwrap();
    std::fs::write(resources.join("profiles/hana.toml"), profile("Hana")).unwrap();
    std::fs::write(resources.join("profiles/kuro.toml"), profile("Kuro")).unwrap();
    let config = root.path().join("home/.config/tomo");
    let data = root.path().join("home/.local/share/tomo");
    Machine {
        resources,
        config,
        data,
        _root: root,
    }
}

fn request(m: &Machine) -> Request {
    Request {
        resource_dir: Some(m.resources.clone()),
        user_config_dir: Some(m.config.clone()),
        data_root: m.data.clone(),
        ..Request::default()
    }
}

fn names(dirs: &ProfileDirs) -> Vec<String> {
    dirs.list().into_iter().map(|p| p.name).collect()
}

#[test]
fn an_installed_app_starts_with_the_bundled_hana_and_lists_the_users_profiles_too() {
    let m = machine();
    let layout = locate(&request(&m)).unwrap();
    assert_eq!(layout.origin, Origin::Bundled(m.resources.clone()));
    assert_eq!(layout.profile, m.resources.join("profiles/hana.toml"));
    assert_eq!(layout.plugins_dir, Some(m.resources.join("plugins")));
    assert_eq!(layout.models_dir, Some(m.data.join("live2d")));
    assert_eq!(names(&layout.profiles), ["Hana", "Kuro"]);

    // The user drops in a profile of their own and one replacing the bundled Kuro.
    let user = m.config.join("profiles");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("mine.toml"), profile("Mine")).unwrap();
    std::fs::write(user.join("kuro.toml"), profile("Kuro2")).unwrap();
    std::fs::write(user.join("broken.toml"), "[character\n").unwrap();
    let layout = locate(&request(&m)).unwrap();
    assert_eq!(names(&layout.profiles), ["Hana", "Kuro2", "Mine"]);
    let kuro = layout.profiles.resolve("kuro.toml").unwrap();
    assert_eq!(kuro, user.canonicalize().unwrap().join("kuro.toml"));
    let hana = layout.profiles.resolve("hana.toml").unwrap();
    assert!(hana.starts_with(m.resources.canonicalize().unwrap()));
    for outside in ["../kuro.toml", "/etc/passwd", "missing.toml"] {
        assert!(layout.profiles.resolve(outside).is_err(), "{outside}");
        let op = Op::SwitchProfile {
            path: outside.into(),
        };
        assert!(
            layout.profiles.policy_for(&op).check(op).is_err(),
            "{outside}"
        );
    }
    // The shared policy resolves a switch in the folder that holds the file.
    let op = Op::SwitchProfile {
        path: "kuro.toml".into(),
    };
    let Ok(Op::SwitchProfile { path }) = layout.profiles.policy_for(&op).check(op) else {
        panic!("switching to the user's Kuro is refused");
    };
    assert_eq!(PathBuf::from(path), kuro);
    assert!(
        layout
            .profiles
            .policy_for(&Op::Shutdown)
            .check(Op::Shutdown)
            .is_err()
    );
}

#[test]
fn a_users_hana_replaces_the_bundled_one_at_start() {
    let m = machine();
    let user = m.config.join("profiles");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("hana.toml"), profile("My Hana")).unwrap();
    let layout = locate(&request(&m)).unwrap();
    assert_eq!(layout.profile, user.join("hana.toml"));
    assert_eq!(names(&layout.profiles), ["My Hana", "Kuro"]);
}

#[test]
fn without_bundled_hana_the_first_profile_starts() {
    let m = machine();
    std::fs::remove_file(m.resources.join("profiles/hana.toml")).unwrap();
    let layout = locate(&request(&m)).unwrap();
    assert_eq!(
        layout.profile.canonicalize().unwrap(),
        m.resources
            .join("profiles/kuro.toml")
            .canonicalize()
            .unwrap()
    );
}

#[test]
fn missing_bundled_profiles_are_an_error_that_says_where_it_looked() {
    let m = machine();
    std::fs::remove_dir_all(m.resources.join("profiles")).unwrap();
    let error = locate(&request(&m)).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains(&m.resources.join("profiles").display().to_string()),
        "{message}"
    );
    assert!(message.contains("Reinstall"), "{message}");
}

#[test]
fn an_explicit_profile_lists_its_folder_then_the_users() {
    let m = machine();
    let user = m.config.join("profiles");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("mine.toml"), profile("Mine")).unwrap();
    let explicit = m.resources.join("profiles/kuro.toml");
    let layout = locate(&Request {
        profile: Some(explicit.clone()),
        ..request(&m)
    })
    .unwrap();
    assert_eq!(layout.origin, Origin::Explicit);
    assert_eq!(layout.profile, explicit);
    assert_eq!(
        layout.plugins_dir, None,
        "tomo-runtime's default beside the profile"
    );
    assert_eq!(names(&layout.profiles), ["Hana", "Kuro", "Mine"]);
}

#[test]
fn the_data_folder_must_be_writable_and_the_error_names_it() {
    let root = tempfile::tempdir().unwrap();
    check_writable(&root.path().join("new/tomo")).unwrap();
    assert!(root.path().join("new/tomo").is_dir());
    // A file where a folder should be: even root cannot write there.
    std::fs::write(root.path().join("file"), "").unwrap();
    let blocked = root.path().join("file/tomo");
    let error = check_writable(&blocked).unwrap_err();
    assert!(matches!(&error, ResourceError::DataNotWritable { path, .. } if path == &blocked));
    assert!(error.to_string().contains(&blocked.display().to_string()));
}

#[test]
fn the_users_folders_are_made_for_an_installed_app() {
    let m = machine();
    let request = request(&m);
    let layout = locate(&request).unwrap();
    create_user_folders(&request, &layout);
    assert!(m.config.join("profiles").is_dir());
    assert!(m.data.join("live2d").is_dir());
}
