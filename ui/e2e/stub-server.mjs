// A stand-in for `tomo serve` for the UI's end-to-end tests: serves dist/ at /, GET /api/profiles, and the
// session protocol on /ws (every event `{"seq":N,"type":...}` in a replay buffer; `?last_seq=N` replays the
// rest). Each `user_text` plays the scripted turn from script.mjs. It is NOT the real server; the tests take
// the real one from TOMO_UI_SERVER once `tomo serve` exists.
import { createServer } from 'node:http';
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { WebSocketServer } from 'ws';
import { scriptedTurn } from './script.mjs';

const MIME = {
  '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.png': 'image/png', '.moc': 'application/octet-stream', '.mtn': 'text/plain',
};

/** Reads name, agent_id, live2d model and emotion map from the repo's profile TOML files (flat keys only). */
export function readProfiles(dir) {
  return readdirSync(dir).filter((f) => f.endsWith('.toml')).sort().map((f) => {
    const text = readFileSync(join(dir, f), 'utf8');
    let section = '';
    const out = { path: `profiles/${f}`, emotion_map: {} };
    for (const line of text.split('\n')) {
      const sec = line.match(/^\s*\[([^\]]+)\]/);
      if (sec) { section = sec[1]; continue; }
      const kv = line.match(/^\s*([A-Za-z0-9_]+)\s*=\s*"([^"]*)"/);
      if (!kv) continue;
      if (section === 'character' && kv[1] === 'name') out.character_name = kv[2];
      if (section === 'character' && kv[1] === 'agent_id') out.agent_id = kv[2];
      if (section === 'live2d' && kv[1] === 'model') out.live2d_model = kv[2];
      if (section === 'live2d.emotion_map') out.emotion_map[kv[1]] = kv[2];
    }
    return out;
  });
}

export async function startStub({ distDir, profilesDir, delayMs = 120 }) {
  const profiles = readProfiles(profilesDir);
  const events = []; // the replay buffer: every event ever emitted, in seq order
  const clients = new Set();
  const ops = [];
  const connections = []; // the request URLs, to check the reconnect asked with last_seq
  let seq = 0;
  let turnId = 0;
  let current = profiles[0];

  const emit = (ev) => {
    const env = { seq: ++seq, ...ev };
    events.push(env);
    const text = JSON.stringify(env);
    for (const ws of clients) if (ws.readyState === 1) ws.send(text);
  };

  const http = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/api/profiles') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(profiles));
      return;
    }
    let path = normalize(decodeURIComponent(url.pathname)).replace(/^(\.\.[/\\])+/, '');
    if (path === '/' || path === '') path = '/index.html';
    const file = join(distDir, path);
    if (!file.startsWith(distDir) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404);
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': MIME[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });

  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname !== '/ws') return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      connections.push(req.url);
      const last = url.searchParams.has('last_seq') ? Number(url.searchParams.get('last_seq')) : null;
      for (const e of events) if (last === null || e.seq > last) ws.send(JSON.stringify(e));
      clients.add(ws);
      ws.on('close', () => clients.delete(ws));
      ws.on('message', (data) => {
        let op;
        try {
          op = JSON.parse(String(data));
        } catch {
          ws.send(JSON.stringify({ type: 'error_frame', message: 'invalid JSON' }));
          return;
        }
        ops.push(op);
        if (op.type === 'user_text') void playTurn(op.text);
        else if (op.type === 'switch_profile') {
          const p = profiles.find((x) => x.path === op.path);
          if (!p) return emit({ type: 'error', code: 'profile', message: `no profile ${op.path}`, recoverable: true });
          current = p;
          emit({ type: 'session_ready', character: p.character_name, agent_id: p.agent_id, tools: ['get_time'] });
        } else if (op.type !== 'interrupt') {
          ws.send(JSON.stringify({ type: 'error_frame', message: `unknown op ${op.type}` }));
        }
      });
    });
  });

  async function playTurn(text) {
    turnId += 1;
    for (const step of scriptedTurn(turnId, text)) {
      if (step.wait) await new Promise((r) => setTimeout(r, step.wait * delayMs));
      else emit(step);
    }
  }

  emit({ type: 'session_ready', character: current.character_name, agent_id: current.agent_id, tools: ['get_time'] });
  await new Promise((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address();
  return {
    url: `http://127.0.0.1:${port}/`,
    ops,
    connections,
    events,
    close: async () => {
      for (const ws of clients) ws.terminate();
      await new Promise((r) => http.close(r));
    },
  };
}
