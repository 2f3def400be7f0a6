// LLM endpoint settings with presets, applied to the running session with the `set_llm` op. Only the base
// URL, the model and the NAME of the environment variable holding the key are kept (in localStorage: none
// of them is secret). The key itself never passes through the UI nor into a profile: the backend reads it
// from that variable of its own environment (names must end in API_KEY).

export interface LlmPreset {
  id: string;
  label: string;
  baseUrl: string;
  needsKey: boolean;
  exampleModel: string;
  /** The environment variable the key is usually kept in. */
  keyEnv?: string;
}

export const PRESETS: LlmPreset[] = [
  { id: 'ollama', label: 'Ollama (local)', baseUrl: 'http://127.0.0.1:11434/v1', needsKey: false, exampleModel: 'qwen2.5:3b' },
  { id: 'lmstudio', label: 'LM Studio (local)', baseUrl: 'http://127.0.0.1:1234/v1', needsKey: false, exampleModel: 'local-model' },
  { id: 'openai', label: 'OpenAI', baseUrl: 'https://api.openai.com/v1', needsKey: true, exampleModel: 'gpt-4o-mini', keyEnv: 'OPENAI_API_KEY' },
  { id: 'deepseek', label: 'DeepSeek', baseUrl: 'https://api.deepseek.com/v1', needsKey: true, exampleModel: 'deepseek-chat', keyEnv: 'DEEPSEEK_API_KEY' },
  { id: 'openrouter', label: 'OpenRouter', baseUrl: 'https://openrouter.ai/api/v1', needsKey: true, exampleModel: 'openai/gpt-4o-mini', keyEnv: 'OPENROUTER_API_KEY' },
];

export interface LlmSettings {
  baseUrl: string;
  model: string;
  /** Name of the environment variable with the API key ('' = keep the session's key). */
  keyEnv: string;
}

/** The op that applies `s` to the running session. */
export function setLlmOp(s: LlmSettings): { type: 'set_llm'; base_url: string; model: string; api_key_env?: string } {
  const keyEnv = s.keyEnv.trim();
  return { type: 'set_llm', base_url: s.baseUrl, model: s.model, ...(keyEnv ? { api_key_env: keyEnv } : {}) };
}

/** A key variable name the backend accepts (it refuses anything else, so no other secret can be sent). */
export function validateKeyEnv(value: string): string | null {
  if (value.trim() === '') return null;
  return /^[A-Z0-9_]*API_KEY$/.test(value.trim()) ? null : 'The variable name must end in API_KEY (e.g. OPENAI_API_KEY)';
}

const KEY = 'tomo.llm';

/** Validates a user-typed endpoint: http(s) only, and plain http only for loopback (keys must not travel
 * in clear text over a network). Returns an error message or null. */
export function validateBaseUrl(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'Not a URL (expected e.g. http://127.0.0.1:11434/v1)';
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol !== 'http:') return 'Use http:// or https://';
  const host = url.hostname;
  if (host === '127.0.0.1' || host === 'localhost' || host === '[::1]') return null;
  return 'Plain http is only allowed for this computer (127.0.0.1); use https for remote endpoints';
}

export function loadSettings(storage: Pick<Storage, 'getItem'> | null): LlmSettings {
  const fallback = { baseUrl: PRESETS[0].baseUrl, model: PRESETS[0].exampleModel, keyEnv: '' };
  try {
    const raw = storage?.getItem(KEY);
    if (!raw) return fallback;
    const v = JSON.parse(raw) as Partial<LlmSettings>;
    if (typeof v.baseUrl !== 'string' || typeof v.model !== 'string') return fallback;
    return { baseUrl: v.baseUrl, model: v.model, keyEnv: typeof v.keyEnv === 'string' ? v.keyEnv : '' };
  } catch {
    return fallback;
  }
}

/** Persists only the three non-secret fields, whatever else the caller's object holds. */
export function saveSettings(storage: Pick<Storage, 'setItem'> | null, s: LlmSettings): void {
  storage?.setItem(KEY, JSON.stringify({ baseUrl: s.baseUrl, model: s.model, keyEnv: s.keyEnv }));
}
