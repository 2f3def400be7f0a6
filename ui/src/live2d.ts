// The Live2D character: pixi.js 6 + pixi-live2d-display (both runtimes: Cubism 2 `*.model.json` and
// Cubism 3/4 `*.model3.json`), drawn on a transparent canvas. The two Cubism cores are the classic scripts
// vendor/live2dcubism2core.min.js and vendor/live2dcubism4core.min.js that index.html loads first (the
// index build refuses to load without both).
import * as PIXI from 'pixi.js';
import { install as installNoEval } from '@pixi/unsafe-eval';
import { Live2DModel, MotionPriority, cubism4Ready } from 'pixi-live2d-display';
import type { CharacterCommand } from './director';
import type { ModelCapabilities } from './emotion';
import { LipSync } from './lipsync';
import { paramsOf, type Params } from './params';

// pixi 6 compiles uniform uploaders with `new Function`; this swaps them for plain functions so the page's
// Content-Security-Policy can forbid 'unsafe-eval'.
installNoEval(PIXI);
Live2DModel.registerTicker(PIXI.Ticker);

const TRACE_LEN = 400;

/** Starts the Cubism 4 framework (it needs the core's WebAssembly compiled) and returns the core's version,
 * e.g. "5.0.0": proof the runtime a `*.model3.json` needs works under the page's Content-Security-Policy. */
export async function cubism4Version(): Promise<string> {
  await cubism4Ready();
  const core = (window as unknown as { Live2DCubismCore?: { Version: { csmGetVersion(): number } } })
    .Live2DCubismCore;
  if (!core) throw new Error('the Cubism 4 core script did not load');
  const v = core.Version.csmGetVersion();
  return `${(v >>> 24) & 0xff}.${(v >>> 16) & 0xff}.${v & 0xffff}`;
}
// The part of pixi-live2d-display's internals we use, typed loosely: its public types don't expose the
// expression manager's current expression.
interface ExpressionManagerLike {
  definitions: { name?: string; Name?: string }[];
  expressions: unknown[];
  currentExpression: unknown;
  defaultExpression: unknown;
  setExpression(index: number | string): Promise<boolean>;
  resetExpression(): void;
}

export class Character {
  readonly lipsync = new LipSync();
  /** Recent mouth values written to the model (for the latency overlay and tests). */
  readonly mouthTrace: { t: number; v: number }[] = [];
  private app: PIXI.Application;
  private model: Live2DModel | null = null;
  private params: Params | null = null;
  /** Parameters someone asked about (see `param`), with their values as last drawn. */
  private readonly watchedParams = new Map<string, number | null>();
  private expressionId: string | null = null;
  private readonly host: HTMLElement;

  constructor(host: HTMLElement) {
    this.host = host;
    this.app = new PIXI.Application({
      backgroundAlpha: 0,
      resizeTo: host,
      antialias: true,
      autoDensity: true,
      resolution: window.devicePixelRatio || 1,
    });
    host.appendChild(this.app.view);
    window.addEventListener('resize', () => this.layout());
  }

  get loaded(): boolean {
    return this.model !== null;
  }

  /** Loads (or replaces) the model. Throws a readable Error when the files can't be loaded. */
  async load(url: string): Promise<void> {
    let model: Live2DModel;
    try {
      model = await Live2DModel.from(url, { autoInteract: false });
    } catch (e) {
      throw new Error(`could not load Live2D model ${url}: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (this.model) {
      this.app.stage.removeChild(this.model);
      this.model.destroy();
    }
    this.model = model;
    this.params = paramsOf(model.internalModel.coreModel, model.internalModel.settings);
    this.expressionId = null;
    this.lipsync.stop();
    this.app.stage.addChild(model);
    // Lip sync goes after motions, expressions and physics, right before the core model updates, so the
    // envelope wins over whatever the idle motion does with the mouth.
    this.watchedParams.clear();
    model.internalModel.on('beforeModelUpdate', () => {
      this.applyMouth();
      const params = this.params;
      if (params) for (const id of this.watchedParams.keys()) this.watchedParams.set(id, params.get(id));
    });
    this.layout();
  }

  capabilities(): ModelCapabilities {
    if (!this.model) return { expressions: [], motionGroups: [] };
    const mm = this.model.internalModel.motionManager;
    const em = mm.expressionManager as unknown as ExpressionManagerLike | undefined;
    return {
      expressions: em ? em.definitions.map((d) => d.name ?? d.Name ?? '').filter((n) => n !== '') : [],
      motionGroups: Object.keys(mm.definitions),
    };
  }

  /** The expression the model's expression manager holds now (null: the default), read from the model
   * itself rather than from what we asked for. */
  get expression(): string | null {
    const em = this.model?.internalModel.motionManager.expressionManager as unknown as
      | ExpressionManagerLike
      | undefined;
    if (!em || this.expressionId === null) return null;
    const idx = em.expressions.indexOf(em.currentExpression);
    const def = idx >= 0 ? em.definitions[idx] : undefined;
    return def ? (def.name ?? def.Name ?? null) : null;
  }

  /** The value a parameter had when the model was last drawn (`mouth`: the model's mouth parameter, whatever
   * the runtime calls it). Read during the frame: between frames a Cubism 4 model holds its parameters as
   * they were before expressions, lip sync and physics were applied. Null until a frame has been drawn. */
  param(id: string): number | null {
    if (!this.params) return null;
    const key = id === 'mouth' ? this.params.mouth : id;
    if (!this.watchedParams.has(key)) this.watchedParams.set(key, null);
    return this.watchedParams.get(key) ?? null;
  }

  /** Which Cubism runtime draws the current model. */
  get runtime(): 'cubism2' | 'cubism4' | null {
    return this.params?.runtime ?? null;
  }

  /** The model's box in CSS pixels relative to the viewport (for the screenshot check). */
  bounds(): { x: number; y: number; width: number; height: number } | null {
    if (!this.model) return null;
    const b = this.model.getBounds();
    const r = this.app.view.getBoundingClientRect();
    return { x: r.left + b.x, y: r.top + b.y, width: b.width, height: b.height };
  }

  async apply(cmd: CharacterCommand): Promise<void> {
    const model = this.model;
    if (!model) return;
    const em = model.internalModel.motionManager.expressionManager as unknown as
      | ExpressionManagerLike
      | undefined;
    switch (cmd.kind) {
      case 'expression':
        // false = already the current expression (nothing to do) or unknown id (capabilities() filters).
        if (em && (await em.setExpression(cmd.id))) this.expressionId = cmd.id;
        return;
      case 'reset_expression':
        if (em) {
          // resetExpression() alone leaves `currentExpression` set, and setExpression() of that same id
          // would then be refused as "already current"; clear it first.
          em.currentExpression = em.defaultExpression;
          em.resetExpression();
        }
        this.expressionId = null;
        return;
      case 'motion':
        await model.motion(cmd.group, undefined, MotionPriority.NORMAL);
        return;
      case 'lipsync':
        this.lipsync.start(cmd.envelope, cmd.frameMs, cmd.durationMs, performance.now());
        return;
      case 'stop_lipsync':
        this.lipsync.stop();
        return;
      case 'hold_lipsync':
        this.lipsync.hold(performance.now());
        return;
      case 'resume_lipsync':
        this.lipsync.resume(performance.now());
        return;
      case 'rest':
        // Idle motions restart by themselves once nothing else plays; this just makes it immediate. The
        // group is "idle" in Cubism 2 models and "Idle" in Cubism 4 ones.
        await model.motion(model.internalModel.motionManager.groups.idle, undefined, MotionPriority.IDLE);
        return;
    }
  }

  private applyMouth(): void {
    const params = this.params;
    if (!params) return;
    const now = performance.now();
    const v = this.lipsync.value(now);
    if (v === null) return;
    params.set(params.mouth, v);
    // Read back what the core model holds, so the trace shows the parameter really moved.
    this.mouthTrace.push({ t: now, v: params.get(params.mouth) });
    if (this.mouthTrace.length > TRACE_LEN) this.mouthTrace.splice(0, this.mouthTrace.length - TRACE_LEN);
  }

  private layout(): void {
    const model = this.model;
    if (!model) return;
    const w = this.host.clientWidth;
    const h = this.host.clientHeight;
    // Fit the model's natural size into the stage with a margin (hair and motions reach past the reported
    // bounds), centred horizontally, resting on the bottom edge.
    model.scale.set(1);
    const scale = Math.min((w * 0.9) / model.width, (h * 0.9) / model.height);
    model.scale.set(scale);
    model.x = (w - model.width) / 2;
    model.y = h - model.height;
  }
}
