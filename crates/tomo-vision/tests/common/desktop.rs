//! A private X desktop for tests: Xvfb + openbox, and real windows (ImageMagick `display`) showing text.
//! Each test binary that uses it must hold a single test: `start_desktop` sets `DISPLAY` for the process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Desktop {
    xvfb: Child,
    wm: Child,
    pub display: String,
}

impl Drop for Desktop {
    fn drop(&mut self) {
        let _ = self.wm.kill();
        let _ = self.xvfb.kill();
        let _ = self.wm.wait();
        let _ = self.xvfb.wait();
    }
}

pub fn have(binary: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {binary}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Xvfb on a free display number + openbox, and `DISPLAY` pointing at it for this process.
pub fn start_desktop() -> Option<Desktop> {
    for binary in ["Xvfb", "openbox", "xdotool", "xprop"] {
        if !have(binary) {
            super::skip_or_fail(&format!(
                "`{binary}` is missing (Debian packages xvfb openbox xdotool x11-utils)"
            ));
            return None;
        }
    }
    let n = (90..200)
        .find(|n| !Path::new(&format!("/tmp/.X{n}-lock")).exists())
        .expect("no free X display number");
    let display = format!(":{n}");
    let xvfb = Command::new("Xvfb")
        .args([&display, "-screen", "0", "1024x768x24", "-nolisten", "tcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn Xvfb");
    let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "Xvfb did not start on {display}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    #[allow(unsafe_code)]
    // SAFETY: this test binary runs a single test, and DISPLAY is set before it starts any thread that
    // reads the environment (xcap connects to the X server from the watcher's threads later).
    unsafe {
        std::env::set_var("DISPLAY", &display);
    }
    let openbox = || {
        Command::new("openbox")
            .env("DISPLAY", &display)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn openbox")
    };
    let mut wm = openbox();
    // openbox is up once it advertises itself on the root window (then it maintains _NET_CLIENT_LIST).
    // On a loaded machine it can find the display not yet answering and exit (a CI run waited the
    // whole 20 s for one that had): start it again then.
    let start = Instant::now();
    loop {
        if matches!(wm.try_wait(), Ok(Some(_))) {
            wm = openbox();
        }
        let out = Command::new("xprop")
            .args(["-root", "_NET_SUPPORTING_WM_CHECK"])
            .env("DISPLAY", &display)
            .output()
            .expect("run xprop");
        if String::from_utf8_lossy(&out.stdout).contains("window id") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "openbox did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(Desktop { xvfb, wm, display })
}

/// A window titled `title` showing `image`.
pub fn open_window(desktop: &Desktop, title: &str, image: &Path) -> Child {
    open_window_at(desktop, title, image, "+40+40")
}

/// A window titled `title` showing `image`, placed by an X geometry like `+40+40`.
pub fn open_window_at(desktop: &Desktop, title: &str, image: &Path, geometry: &str) -> Child {
    let child = Command::new("display")
        .args(["-title", title, "-geometry", geometry])
        .arg(image)
        .env("DISPLAY", &desktop.display)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ImageMagick display");
    let start = Instant::now();
    while !tomo_vision::list_windows()
        .unwrap()
        .iter()
        .any(|w| w.title == title)
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "window did not appear"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

pub fn close_window(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

pub fn render(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
    let font = PathBuf::from("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf");
    let font = if font.is_file() {
        font
    } else {
        super::cjk_font().unwrap()
    };
    let path = dir.join(name);
    assert!(super::render_text(lines, &font, 20, &path));
    path
}

/// Everything a window test needs: the OCR models, ImageMagick, and a private desktop. `None` when
/// something is missing (the test is skipped, or fails in CI, with the reason).
pub fn ocr_desktop() -> Option<(tomo_vision::OcrModels, Desktop)> {
    let models = super::ocr_models()?;
    if super::convert_binary().is_none() || !have("display") {
        super::skip_or_fail(
            "ImageMagick (`convert`, `display`) is missing (Debian package imagemagick)",
        );
        return None;
    }
    let desktop = start_desktop()?;
    Some((models, desktop))
}
