// Maps an `[emotion]` action to what the Live2D model can do. The profile's `[live2d.emotion_map]` maps tag
// names to an expression id (Shizuku: f01..f04) or a motion group (e.g. "idle"); without a map entry, a tag
// that is itself an expression id or motion group of the model is used as is.

export type CharacterCue = { kind: 'expression'; id: string } | { kind: 'motion'; group: string };

export interface ModelCapabilities {
  expressions: string[];
  motionGroups: string[];
}

function lookup(map: Record<string, string>, name: string): string | undefined {
  if (Object.prototype.hasOwnProperty.call(map, name)) return map[name];
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(map)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

function asCue(target: string, model: ModelCapabilities): CharacterCue | null {
  if (model.expressions.includes(target)) return { kind: 'expression', id: target };
  if (model.motionGroups.includes(target)) return { kind: 'motion', group: target };
  return null;
}

/** The cue for emotion `name`, or null when neither the map nor the model knows it (the tag is ignored). */
export function resolveEmotion(
  name: string,
  map: Record<string, string> | null | undefined,
  model: ModelCapabilities,
): CharacterCue | null {
  const mapped = map ? lookup(map, name) : undefined;
  if (mapped !== undefined) return asCue(mapped, model);
  return asCue(name, model);
}
