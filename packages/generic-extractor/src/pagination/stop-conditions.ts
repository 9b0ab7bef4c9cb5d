/**
 * Stop conditions that wrap any scroller. Wrapping order: nextPageFlag wraps
 * the base scroller, forceStop wraps that, limitStop is outermost; so per page the checks run
 * limitStop → forceStop (pages, time, volume) → nextPageFlag → the method's own rule, and the
 * first one that says stop wins. (The same-response check runs before all of them, in the job
 * loop.) Pure, apart from reading the clock for forceStop.time.
 */
import { UserError } from '../errors.js';
import { getDataFromPath } from '../response/data-path.js';
import { isNumeric, isObject, phpBool, phpInt, phpJsonEncode, type Json, type JsonObject } from '../php.js';
import type { JobRequestConfig, RestRequest } from '../http/request.js';
import type { Scroller, StopListener } from './scrollers.js';

abstract class Decorator implements Scroller {
  constructor(protected inner: Scroller) {}
  get onStop(): StopListener {
    return this.inner.onStop;
  }
  set onStop(listener: StopListener) {
    this.inner.onStop = listener;
  }
  first(job: JobRequestConfig): RestRequest | null {
    return this.inner.first(job);
  }
  abstract next(job: JobRequestConfig, response: Json, data: Json[]): RestRequest | null;
  reset(): void {
    this.inner.reset();
  }
  clone(): Scroller {
    const copy = Object.assign(Object.create(Object.getPrototypeOf(this)) as Decorator, this);
    copy.inner = this.inner.clone();
    return copy;
  }
  protected stop(reason: string): null {
    this.onStop(reason);
    return null;
  }
}

/** `nextPageFlag {field, stopOn, ifNotSet}`: a top-level field converted with PHP `(bool)`. */
export class NextPageFlag extends Decorator {
  private readonly field: string;
  private readonly stopOn: boolean;
  private readonly ifNotSet: boolean;

  constructor(inner: Scroller, options: Json) {
    super(inner);
    if (!isObject(options)) throw new UserError("'pagination.nextPageFlag' must be an object");
    if (typeof options.field !== 'string' || options.field === '') {
      throw new UserError("'field' has to be specified for 'nextPageFlag'");
    }
    if (typeof options.stopOn !== 'boolean') throw new UserError("'stopOn' value must be set to a boolean value for 'nextPageFlag'");
    if (options.ifNotSet !== undefined && typeof options.ifNotSet !== 'boolean') {
      throw new UserError("'ifNotSet' value must be a boolean for 'nextPageFlag'");
    }
    this.field = options.field;
    this.stopOn = options.stopOn;
    this.ifNotSet = (options.ifNotSet as boolean | undefined) ?? options.stopOn;
  }

  next(job: JobRequestConfig, response: Json, data: Json[]): RestRequest | null {
    const present = isObject(response) && response[this.field] !== undefined && response[this.field] !== null;
    const value = present ? phpBool((response as JsonObject)[this.field]) : this.ifNotSet;
    if (value === this.stopOn) return this.stop(`Stopping scrolling because '${this.field}' is '${value}'`);
    return this.inner.next(job, response, data);
  }
}

/** `strtotime(str, 0)` for the simple forms a time limit uses: `"90"`, `"1 hour"`, `"2 days 3 minutes"`. */
export function parseDurationSeconds(value: Json): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string') {
    if (/^\s*\d+\s*$/.test(value)) return Number(value);
    const units: Record<string, number> = { sec: 1, second: 1, min: 60, minute: 60, hour: 3600, day: 86400, week: 604800 };
    let total = 0;
    let matched = false;
    const re = /([+-]?\d+)\s*(sec|second|min|minute|hour|day|week)s?\b/gi;
    for (const m of value.matchAll(re)) {
      total += Number(m[1]) * units[m[2].toLowerCase()];
      matched = true;
    }
    if (matched) return total;
  }
  throw new UserError(`'forceStop.time' must be a number of seconds or a duration such as "1 hour", not '${String(value)}'`);
}

/** `forceStop {pages, time, volume}`: hard limits on the pages, seconds and bytes of a job. */
export class ForceStop extends Decorator {
  private readonly pages: number | null;
  private readonly timeSeconds: number | null;
  private readonly volume: number | null;
  private pageCounter = 0;
  private startedAt = 0;
  private volumeCounter = 0;

  constructor(inner: Scroller, options: Json, private readonly now: () => number = Date.now) {
    super(inner);
    if (!isObject(options)) throw new UserError("'pagination.forceStop' must be an object");
    if (options.pages !== undefined && !Number.isInteger(options.pages)) throw new UserError("'forceStop.pages' must be an integer");
    this.pages = (options.pages as number | undefined) ?? null;
    this.timeSeconds = options.time !== undefined ? parseDurationSeconds(options.time) : null;
    if (options.volume !== undefined && !isNumeric(options.volume)) throw new UserError("'forceStop.volume' must be a number of bytes");
    this.volume = options.volume !== undefined ? phpInt(options.volume) : null;
  }

  override first(job: JobRequestConfig): RestRequest | null {
    this.pageCounter = 1;
    this.startedAt = this.now();
    return this.inner.first(job);
  }

  next(job: JobRequestConfig, response: Json, data: Json[]): RestRequest | null {
    if (this.pages !== null && ++this.pageCounter > this.pages) {
      return this.stop(`Force stopping: page limit reached (${this.pages} pages).`);
    }
    if (this.timeSeconds !== null && this.startedAt + this.timeSeconds * 1000 <= this.now()) {
      return this.stop(`Force stopping: time limit reached (${this.timeSeconds} seconds).`);
    }
    if (this.volume !== null) {
      // Measured on PHP's json_encode of the decoded response, as the reference does.
      this.volumeCounter += Buffer.byteLength(phpJsonEncode(response), 'utf8');
      if (this.volumeCounter > this.volume) return this.stop(`Force stopping: volume limit reached (${this.volume} bytes).`);
    }
    return this.inner.next(job, response, data);
  }

  override reset(): void {
    this.pageCounter = 0;
    this.volumeCounter = 0;
    this.startedAt = this.now();
    super.reset();
  }
}

/** `limitStop {count | field}`: stop once the items so far reach the limit (last page kept whole). */
export class LimitStop extends Decorator {
  private readonly count: number | null;
  private readonly field: string | null;
  private current = 0;

  constructor(inner: Scroller, options: Json) {
    super(inner);
    if (!isObject(options)) throw new UserError("'pagination.limitStop' must be an object");
    const hasCount = options.count !== undefined && options.count !== null;
    const hasField = typeof options.field === 'string' && options.field !== '';
    if (hasCount === hasField) throw new UserError("One of 'limitStop.field' or 'limitStop.count' attributes is required (and only one).");
    if (hasCount && !isNumeric(options.count)) throw new UserError("'limitStop.count' must be an integer");
    this.count = hasCount ? phpInt(options.count) : null;
    this.field = hasField ? (options.field as string) : null;
  }

  next(job: JobRequestConfig, response: Json, data: Json[]): RestRequest | null {
    this.current += data.length;
    const limit = this.count ?? getDataFromPath(this.field as string, response, '.');
    // PHP 7: `int >= null` is true, so a missing field stops after the first page (documented).
    const reached = limit === null || typeof limit === 'object' || this.current >= Number(isNumeric(limit) ? limit : 0);
    if (reached) {
      const shown = limit === null || typeof limit === 'object' ? `null (field '${this.field}' not found)` : String(limit);
      return this.stop(`Limit reached, stopping scrolling. Current count: ${this.current}, limit: ${shown}`);
    }
    return this.inner.next(job, response, data);
  }

  override reset(): void {
    this.current = 0;
    super.reset();
  }
}
