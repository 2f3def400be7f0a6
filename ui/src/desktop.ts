// Desktop-only wiring (Tauri): the IPC transport over the generated bindings, pet mode, dragging the pet,
// and reporting where the character is so the rest of the window lets clicks through.
import { getCurrentWindow } from '@tauri-apps/api/window';
import { commands, events } from './bindings';
import type { TauriIpc } from './tauri';
import type { Op } from './wire';
import type { ProfileInfo } from './profiles';
import { parseProfiles } from './profiles';

/** The generated bindings as the transport's backend. */
export const bindingsIpc: TauriIpc = {
  async listen(onEvent) {
    return events.sessionEvent.listen((e) => onEvent(e.payload));
  },
  async eventsSince(lastSeq) {
    return commands.eventsSince(lastSeq);
  },
  async sendOp(op: Op) {
    const r = await commands.sendOp(op);
    return r.status === 'ok' ? null : String(r.error);
  },
};

export async function desktopProfiles(): Promise<ProfileInfo[]> {
  return parseProfiles(await commands.listProfiles());
}

type Rect = { x: number; y: number; width: number; height: number };

/** Pet mode: a toggle, the body class, dragging the window by the character, and the hit region. */
export function setupPetMode(opts: { toolbar: HTMLElement; stage: HTMLElement; bounds: () => Rect | null }): void {
  const button = document.createElement('button');
  button.type = 'button';
  button.dataset.testid = 'pet-toggle';
  button.className = 'pet-toggle';
  button.textContent = 'Pet mode';
  let on = false;
  const show = (next: boolean) => {
    on = next;
    document.documentElement.classList.toggle('pet', on);
    // The stage changes size (the side panel goes away): let the canvas follow.
    window.dispatchEvent(new Event('resize'));
    button.setAttribute('aria-pressed', String(on));
    button.textContent = on ? 'Window' : 'Pet mode';
    lastRegion = '';
  };
  button.addEventListener('click', () => {
    void commands.setPetMode(!on);
  });
  opts.toolbar.append(button);
  // Listen first, then ask: a change in between arrives as an event, and the answer cannot be older than it.
  void events.petModeChanged
    .listen((e) => show(e.payload.on))
    .then(() => commands.petMode())
    .then(show);

  // Drag the pet: a press on the character moves the window (the window manager does the moving).
  opts.stage.addEventListener('mousedown', (e) => {
    if (on && e.button === 0) void getCurrentWindow().startDragging();
  });

  // The character's rectangle (plus the toggle button, so pet mode can be left) in window coordinates.
  let lastRegion = '';
  const report = () => {
    const b = opts.bounds();
    const t = button.getBoundingClientRect();
    const region: Rect | null = !on || !b ? null : union(b, { x: t.left, y: t.top, width: t.width, height: t.height });
    const key = JSON.stringify(region);
    if (key === lastRegion) return;
    lastRegion = key;
    void commands.setHitRegion(region);
  };
  window.setInterval(report, 250);
}

function union(a: Rect, b: Rect): Rect {
  const x = Math.min(a.x, b.x);
  const y = Math.min(a.y, b.y);
  return {
    x,
    y,
    width: Math.max(a.x + a.width, b.x + b.width) - x,
    height: Math.max(a.y + a.height, b.y + b.height) - y,
  };
}
