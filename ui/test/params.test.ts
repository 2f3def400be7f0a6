import { describe, expect, it } from 'vitest';
import { paramsOf } from '../src/params';

/** A Cubism 2 core model's parameter API over a plain map. */
function cubism2Core() {
  const values = new Map<string, number>();
  return {
    values,
    setParamFloat: (id: string, v: number) => void values.set(id, v),
    getParamFloat: (id: string) => values.get(id) ?? 0,
  };
}

/** A Cubism 4 core model's parameter API over a plain map. */
function cubism4Core() {
  const values = new Map<string, number>();
  return {
    values,
    setParameterValueById: (id: string, v: number) => void values.set(id, v),
    getParameterValueById: (id: string) => values.get(id) ?? 0,
  };
}

describe('paramsOf', () => {
  it('drives a Cubism 2 model through setParamFloat and its PARAM_MOUTH_OPEN_Y', () => {
    const core = cubism2Core();
    const p = paramsOf(core, {});
    expect(p.runtime).toBe('cubism2');
    p.set(p.mouth, 0.7);
    expect(core.values.get('PARAM_MOUTH_OPEN_Y')).toBe(0.7);
    expect(p.get(p.mouth)).toBe(0.7);
  });

  it("drives a Cubism 4 model's mouth named by its LipSync group", () => {
    const core = cubism4Core();
    const p = paramsOf(core, { getLipSyncParameters: () => ['ParamA', 'ParamB'] });
    expect(p.runtime).toBe('cubism4');
    expect(p.mouth).toBe('ParamA');
    p.set(p.mouth, 0.4);
    expect(core.values.get('ParamA')).toBe(0.4);
    expect(core.values.has('PARAM_MOUTH_OPEN_Y')).toBe(false);
  });

  it('falls back to ParamMouthOpenY when a Cubism 4 model declares no LipSync group', () => {
    const core = cubism4Core();
    expect(paramsOf(core, { getLipSyncParameters: () => undefined }).mouth).toBe('ParamMouthOpenY');
    expect(paramsOf(core, {}).mouth).toBe('ParamMouthOpenY');
  });
});
