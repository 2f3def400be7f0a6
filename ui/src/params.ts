// A loaded model's parameters, whichever Cubism runtime draws it. Kept apart from live2d.ts (which needs the
// Cubism cores and a WebGL page) so it can be unit-tested.
interface Cubism2Core {
  setParamFloat(id: string, v: number): void;
  getParamFloat(id: string): number;
}
interface Cubism4Core {
  setParameterValueById(id: string, v: number): void;
  getParameterValueById(id: string): number;
}
interface Cubism4SettingsLike {
  getLipSyncParameters?(): string[] | undefined;
}

/** One way to read and write a model's parameters, whichever Cubism runtime it is. */
export interface Params {
  readonly runtime: 'cubism2' | 'cubism4';
  /** The parameter the mouth opens with. */
  readonly mouth: string;
  get(id: string): number;
  set(id: string, v: number): void;
}

/** The parameter API of a loaded model. Cubism 2 models name the mouth PARAM_MOUTH_OPEN_Y; Cubism 3/4
 * models declare it in their LipSync group (ParamMouthOpenY by convention). */
export function paramsOf(core: unknown, settings: unknown): Params {
  const c4 = core as Partial<Cubism4Core>;
  if (typeof c4.setParameterValueById === 'function' && typeof c4.getParameterValueById === 'function') {
    const ids = (settings as Cubism4SettingsLike).getLipSyncParameters?.() ?? [];
    const c = core as Cubism4Core;
    return {
      runtime: 'cubism4',
      mouth: ids[0] ?? 'ParamMouthOpenY',
      get: (id) => c.getParameterValueById(id),
      set: (id, v) => c.setParameterValueById(id, v),
    };
  }
  const c = core as Cubism2Core;
  return {
    runtime: 'cubism2',
    mouth: 'PARAM_MOUTH_OPEN_Y',
    get: (id) => c.getParamFloat(id),
    set: (id, v) => c.setParamFloat(id, v),
  };
}
