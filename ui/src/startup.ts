// The desktop app's startup, shown over the character until the session runs: the first run's model install
// with its progress, or why the app cannot start (missing characters, a data folder it cannot write). A
// launcher leaves no terminal to read, so this is the only place such news can go.
import { commands, events, type Startup_Serialize } from './bindings';

/** Where the desktop app's startup stands (src-tauri's `startup::Startup`, from the generated bindings). */
export type Startup = Startup_Serialize;

export interface StartupView {
  level: 'info' | 'error';
  title: string;
  text: string;
  /** 0..1 of the file being downloaded, when its size is known. */
  progress: number | null;
  detail: string | null;
}

const mb = (bytes: number) => `${(bytes / 1_000_000).toFixed(1)} MB`;

/** What to show for a status; `null`: nothing (starting quickly, or running). */
export function startupView(s: Startup): StartupView | null {
  switch (s.phase) {
    case 'starting':
    case 'ready':
      return null;
    case 'installing_models':
      return {
        level: 'info',
        title: 'Setting up',
        text: s.message,
        progress: s.total ? Math.min(1, s.done / s.total) : null,
        detail: s.file ? `Downloading ${s.file}: ${mb(s.done)}${s.total ? ` of ${mb(s.total)}` : ''}` : null,
      };
    case 'loading_brain':
      return { level: 'info', title: 'Waking up', text: s.message, progress: null, detail: null };
    case 'failed':
      return { level: 'error', title: 'Tomo could not start', text: s.message, progress: null, detail: null };
  }
}

/** The panel; `show` redraws it for a status. */
export function startupPanel(doc: Document): { element: HTMLElement; show(s: Startup): void } {
  const element = doc.createElement('section');
  element.className = 'startup';
  element.dataset.testid = 'startup';
  element.setAttribute('role', 'status');
  element.hidden = true;
  const title = doc.createElement('h2');
  const text = doc.createElement('p');
  const bar = doc.createElement('progress');
  bar.max = 1;
  const detail = doc.createElement('p');
  detail.className = 'detail';
  element.append(title, text, bar, detail);
  return {
    element,
    show(s) {
      const view = startupView(s);
      element.hidden = view === null;
      element.dataset.phase = s.phase;
      if (!view) return;
      element.classList.toggle('error', view.level === 'error');
      title.textContent = view.title;
      text.textContent = view.text; // textContent only: messages carry paths and error text
      // An indeterminate bar while something is under way (a download of unknown size, loading the brain).
      bar.hidden = view.progress === null && s.phase !== 'installing_models' && s.phase !== 'loading_brain';
      if (view.progress === null) bar.removeAttribute('value');
      else bar.value = view.progress;
      detail.textContent = view.detail ?? '';
      detail.hidden = view.detail === null;
    },
  };
}

/** Desktop only: listen first, then ask, so a change in between is not lost (as pet mode does). */
export function setupStartup(root: HTMLElement): void {
  const panel = startupPanel(root.ownerDocument);
  root.append(panel.element);
  void events.startupChanged
    .listen((e) => panel.show(e.payload as Startup))
    .then(() => commands.startupStatus())
    .then((s) => panel.show(s as Startup));
}
