// LLM endpoint settings with presets. Only the base URL and model name are kept (in localStorage, they are
// not secret). The API key is never stored by the UI nor written into a profile: the backend reads it from
// the environment variable the profile names (`api_key_env`), and a later step moves it to the OS keyring.

export interface LlmPreset {
  id: string;
  label: string;
  baseUrl: string;
  needsKey: boolean;
  exampleModel: string;
}

export const PRESETS: LlmPreset[] = [
  { id: 'ollama', label: 'Ollama (local)', baseUrl: 'http://127.0.0.1:11434/v1', needsKey: false, exampleModel: 'qwen2.5:3b' },
  { id: 'lmstudio', label: 'LM Studio (local)', baseUrl: 'http://127.0.0.1:1234/v1', needsKey: false, exampleModel: 'local-model' },
  { id: 'openai', label: 'OpenAI', baseUrl: 'https://api.openai.com/v1', needsKey: true, exampleModel: 'gpt-4o-mini' },
  { id: 'deepseek', label: 'DeepSeek', baseUrl: 'https://api.deepseek.com/v1', needsKey: true, exampleModel: 'deepseek-chat' },
  { id: 'openrouter', label: 'OpenRouter', baseUrl: 'https://openrouter.ai/api/v1', needsKey: true, exampleModel: 'openai/gpt-4o-mini' },
];

export interface LlmSettings {
  baseUrl: string;
  model: string;
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
  const fallback = { baseUrl: PRESETS[0].baseUrl, model: PRESETS[0].exampleModel };
  try {
    const raw = storage?.getItem(KEY);
    if (!raw) return fallback;
    const v = JSON.parse(raw) as Partial<LlmSettings>;
    if (typeof v.baseUrl !== 'string' || typeof v.model !== 'string') return fallback;
    return { baseUrl: v.baseUrl, model: v.model };
  } catch {
    return fallback;
  }
}

/** Persists only the two non-secret fields, whatever else the caller's object holds. */
export function saveSettings(storage: Pick<Storage, 'setItem'> | null, s: LlmSettings): void {
  storage?.setItem(KEY, JSON.stringify({ baseUrl: s.baseUrl, model: s.model }));
}
