/** Error types and location formatting, as libjsonnet prints them. */

export interface Loc {
  file: string;
  line: number;
  col: number;
  endLine: number;
  endCol: number;
}

export function formatLoc(l: Loc): string {
  if (l.line === l.endLine) {
    if (l.endCol === l.col + 1 || l.endCol <= l.col) return `${l.file}:${l.line}:${l.col}`;
    return `${l.file}:${l.line}:${l.col}-${l.endCol}`;
  }
  return `${l.file}:(${l.line}:${l.col})-(${l.endLine}:${l.endCol})`;
}

/** Base class of every error thrown by the Jsonnet implementation. `message` is the full text. */
export class JsonnetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonnetError';
  }
}

/** A static (lex/parse/analysis) error. */
export class StaticError extends JsonnetError {
  constructor(
    public readonly loc: string,
    public readonly msg: string,
  ) {
    super(`STATIC ERROR: ${loc}: ${msg}\n`);
  }
}

export function staticErrorAt(l: Loc | null, msg: string, beginOnly = false): StaticError {
  if (!l) return new StaticError('', msg);
  const s = beginOnly ? `${l.file}:${l.line}:${l.col}` : formatLoc(l);
  return new StaticError(s, msg);
}

/**
 * A runtime error. The stack trace is collected while unwinding, as libjsonnet prints it: one
 * line per frame, `\t<location>\t<name of the frame>`, innermost first, the outermost (top
 * level) unnamed; at most 20 lines (10 + `...` + 10).
 */
export class RuntimeError extends JsonnetError {
  readonly frames: { loc: string; name: string }[] = [];
  /** Set by argument binding errors: the failing call adds no frame of its own. */
  skipOnce = false;
  constructor(public readonly msg: string) {
    super(`RUNTIME ERROR: ${msg}\n`);
  }
  /** The location where the error was raised (first one wins). */
  at(loc: Loc | undefined): this {
    if (loc && this.frames.length === 0) {
      this.frames.push({ loc: formatLoc(loc), name: '' });
      this.render();
    }
    return this;
  }
  /** Unwinding out of a frame named `name`, entered at `loc` (a string for special frames). */
  caller(name: string, loc: Loc | string | undefined): void {
    if (loc === undefined) return;
    const n = this.frames.length;
    if (n > 0) this.frames[n - 1].name = name;
    this.frames.push({ loc: typeof loc === 'string' ? loc : formatLoc(loc), name: '' });
    this.render();
  }
  /** Names the outermost frame so far. */
  rename(name: string): void {
    const n = this.frames.length;
    if (n > 0) {
      this.frames[n - 1].name = name;
      this.render();
    }
  }
  /** Appends an outermost frame (e.g. `During manifestation`). */
  push(loc: string, name = ''): void {
    this.frames.push({ loc, name });
    this.render();
  }
  /** Compatibility: same as at(). */
  addFrame(loc: Loc | undefined): void {
    this.at(loc);
  }
  private render(): void {
    const f = this.frames;
    const sz = f.length;
    let out = `RUNTIME ERROR: ${this.msg}\n`;
    for (let i = 0; i < sz; i++) {
      if (i >= 10 && i < sz - 10) {
        if (i === 10) out += '\t...\n';
      } else out += `\t${f[i].loc}\t${f[i].name}\n`;
    }
    this.message = out;
  }
}
