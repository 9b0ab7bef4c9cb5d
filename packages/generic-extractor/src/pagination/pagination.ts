/**
 * Builds the scroller of `api.pagination` (juicer's ScrollerFactory): the method, then the stop
 * decorators around it (nextPageFlag, forceStop, limitStop, outermost last), and `multiple`
 * with named scrollers that jobs select with their `scroller` key.
 */
import { UserError } from '../errors.js';
import { isObject, phpEmpty, type Json, type JsonObject } from '../php.js';
import type { JobRequestConfig, RestRequest } from '../http/request.js';
import {
  BaseScroller,
  CursorScroller,
  NoScroller,
  OffsetScroller,
  PageScroller,
  ResponseParamScroller,
  ResponseUrlScroller,
  type Scroller,
} from './scrollers.js';
import { ForceStop, LimitStop, NextPageFlag } from './stop-conditions.js';

export const METHODS = ['offset', 'pagenum', 'response.url', 'response.param', 'cursor', 'multiple'];

/**
 * `multiple`: one sub-scroller per name; a job picks one with its `scroller` key, else the
 * `default` one, else no pagination. The job in use is passed through `select` by the runner.
 */
export class MultipleScroller extends BaseScroller {
  private active: Scroller | null = null;

  constructor(
    private scrollers: Map<string, Scroller>,
    private readonly defaultName: string | null,
  ) {
    super();
    if (defaultName !== null && !scrollers.has(defaultName)) {
      throw new UserError(`Default scroller '${defaultName}' does not exist`);
    }
  }

  /** Chooses the sub-scroller for a job (its `scroller` key). */
  select(name: string | undefined): void {
    if (name !== undefined && name !== '') {
      const s = this.scrollers.get(name);
      if (!s) {
        throw new UserError(`Scroller '${name}' not set in API definitions. Scrollers defined: ${[...this.scrollers.keys()].join(', ')}`);
      }
      this.active = s;
    } else {
      this.active = this.defaultName !== null ? (this.scrollers.get(this.defaultName) as Scroller) : new NoScroller();
    }
    this.active.onStop = (reason) => this.onStop(reason);
  }

  private current(): Scroller {
    if (!this.active) this.select(undefined);
    return this.active as Scroller;
  }

  first(job: JobRequestConfig): RestRequest | null {
    return this.current().first(job);
  }

  next(job: JobRequestConfig, response: Json, data: Json[]): RestRequest | null {
    return this.current().next(job, response, data);
  }

  override reset(): void {
    for (const s of this.scrollers.values()) s.reset();
  }

  override clone(): Scroller {
    const copy = new MultipleScroller(new Map([...this.scrollers].map(([k, s]) => [k, s.clone()])), this.defaultName);
    copy.onStop = this.onStop;
    return copy;
  }
}

function baseScroller(options: JsonObject, now: () => number): Scroller {
  const method = options.method;
  if (phpEmpty(method)) return new NoScroller();
  switch (method) {
    case 'offset':
      return new OffsetScroller(options);
    case 'pagenum':
      return new PageScroller(options);
    case 'response.url':
      return new ResponseUrlScroller(options);
    case 'response.param':
      return new ResponseParamScroller(options);
    case 'cursor':
      return new CursorScroller(options);
    case 'multiple': {
      if (!isObject(options.scrollers) || Object.keys(options.scrollers).length === 0) {
        throw new UserError("Missing or empty 'pagination.scrollers' for multiple pagination");
      }
      const subs = new Map<string, Scroller>();
      for (const [name, sub] of Object.entries(options.scrollers)) {
        if (!isObject(sub)) throw new UserError(`'pagination.scrollers.${name}' must be an object`);
        subs.set(name, createScroller(sub, now));
      }
      return new MultipleScroller(subs, phpEmpty(options.default) ? null : String(options.default));
    }
    default:
      throw new UserError(`Unknown pagination method '${String(method)}' (supported: ${METHODS.join(', ')})`);
  }
}

/** The scroller for a pagination configuration, decorated with its stop conditions (`now`: the clock of forceStop.time). */
export function createScroller(options: JsonObject | null, now: () => number = Date.now): Scroller {
  if (!options) return new NoScroller();
  let scroller = baseScroller(options, now);
  if (!phpEmpty(options.nextPageFlag)) scroller = new NextPageFlag(scroller, options.nextPageFlag);
  if (!phpEmpty(options.forceStop)) scroller = new ForceStop(scroller, options.forceStop, now);
  if (!phpEmpty(options.limitStop)) scroller = new LimitStop(scroller, options.limitStop);
  return scroller;
}

/** Finds the `multiple` scroller inside decorators, to select a job's named scroller. */
export function selectScroller(scroller: Scroller, name: string | undefined): void {
  let s: unknown = scroller;
  while (s && !(s instanceof MultipleScroller) && (s as { inner?: unknown }).inner) s = (s as { inner?: unknown }).inner;
  if (s instanceof MultipleScroller) s.select(name);
}

/** True when a forceStop.pages bound is configured anywhere (then the default bound is not needed). */
export function hasPagesBound(options: JsonObject | null): boolean {
  if (!options) return false;
  if (isObject(options.forceStop) && options.forceStop.pages !== undefined) return true;
  if (isObject(options.scrollers)) return Object.values(options.scrollers).some((s) => isObject(s) && hasPagesBound(s));
  return false;
}
