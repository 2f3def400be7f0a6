// Character profiles from `GET /api/profiles` (served by `tomo serve`). The endpoint's exact shape belongs to
// the server, so this accepts the plausible spellings and ignores what it doesn't know.

export interface ProfileInfo {
  /** What `switch_profile` takes, e.g. "profiles/kuro.toml". */
  path: string;
  name: string;
  agentId: string | null;
  /** The profile's `[live2d] model`, e.g. "assets/live2d/shizuku/shizuku.model.json". */
  live2dModel: string | null;
  emotionMap: Record<string, string> | null;
}

export const DEFAULT_MODEL_URL = 'live2d/shizuku/shizuku.model.json';

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function stringMap(v: unknown): Record<string, string> | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

function one(raw: unknown): ProfileInfo | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const o = raw as Record<string, unknown>;
  const live2d = (typeof o.live2d === 'object' && o.live2d !== null ? o.live2d : {}) as Record<string, unknown>;
  const character = (typeof o.character === 'object' && o.character !== null ? o.character : {}) as Record<
    string,
    unknown
  >;
  const path = str(o.path) ?? str(o.file);
  if (!path) return null;
  return {
    path,
    name:
      str(o.character_name) ?? str(character.name) ?? str(o.character) ?? str(o.name) ?? path.replace(/^.*\//, ''),
    agentId: str(o.agent_id) ?? str(character.agent_id),
    live2dModel: str(o.live2d_model) ?? str(live2d.model) ?? str(o.model),
    emotionMap: stringMap(o.emotion_map) ?? stringMap(live2d.emotion_map),
  };
}

/** Normalises the endpoint's JSON (an array, or `{ "profiles": [...] }`). */
export function parseProfiles(json: unknown): ProfileInfo[] {
  const list = Array.isArray(json)
    ? json
    : typeof json === 'object' && json !== null && Array.isArray((json as { profiles?: unknown }).profiles)
      ? (json as { profiles: unknown[] }).profiles
      : [];
  return list.map(one).filter((p): p is ProfileInfo => p !== null);
}

export async function fetchProfiles(base: string): Promise<ProfileInfo[]> {
  const res = await fetch(new URL('api/profiles', base));
  if (!res.ok) throw new Error(`GET /api/profiles answered ${res.status}`);
  return parseProfiles(await res.json());
}

/** Where the UI finds a profile's model. Profiles name models under the repo's `assets/live2d/`; the UI
 * ships the same tree under `live2d/` next to index.html. Only relative paths inside that tree are accepted
 * (no remote content, no `..`). */
export function modelUrl(profileModel: string | null): string {
  if (!profileModel) return DEFAULT_MODEL_URL;
  const rel = profileModel.replace(/^\.?\/?(assets\/)?live2d\//, '');
  if (rel === profileModel || rel.includes('..') || /^[a-z]+:/i.test(rel)) return DEFAULT_MODEL_URL;
  return `live2d/${rel}`;
}

/** The profile whose character is `character` (from `session_ready`), if listed. */
export function findByCharacter(list: ProfileInfo[], character: string | null): ProfileInfo | null {
  if (!character) return null;
  return list.find((p) => p.name === character) ?? null;
}
