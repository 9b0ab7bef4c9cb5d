/**
 * The Grafana dashboard (docker/grafana/sluice-dashboard.json) against the metrics the node
 * exports (src/observability/metrics.ts and prom-client's default metrics), and the files that
 * run it (docker/compose.observability.yaml, docker/prometheus/prometheus.yml, Grafana's
 * provisioning under docker/grafana/provisioning).
 *
 * Every PromQL expression of the dashboard (the panels' targets, also of panels inside rows, and
 * the template variables' queries) is parsed by a small PromQL parser below, and checked: every
 * metric exists in a `new Metrics(...)` registry (histograms only as _bucket, _sum and _count);
 * every label in a selector, a `by`/`without`/`on`/`ignoring` clause or a legend is one the
 * series has at that point (its own labels, `instance` and `job` from Prometheus, `le` of buckets);
 * counters only inside rate/irate/increase over `$__rate_interval`, gauges never there, buckets
 * only under histogram_quantile with `le` kept. Inline cases show that each check rejects what
 * it should.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, posix, resolve } from 'node:path';
import { Metrics } from '../../../src/observability/metrics.js';
import { loadConfig } from '../../../src/config.js';

// js-yaml is the YAML parser among the direct dependencies; it ships no types (as in test/integration/docker-compose.test.ts).
const yaml = createRequire(import.meta.url)('js-yaml') as { load(text: string): unknown };

const DOCKER = resolve('docker');
const DASHBOARD = join(DOCKER, 'grafana/sluice-dashboard.json');
const COMPOSE = join(DOCKER, 'compose.observability.yaml');
const PROMETHEUS = join(DOCKER, 'prometheus/prometheus.yml');
const DATASOURCES = join(DOCKER, 'grafana/provisioning/datasources/prometheus.yml');
const DASHBOARDS = join(DOCKER, 'grafana/provisioning/dashboards/sluice.yml');
const DOCKERFILE = join(DOCKER, 'Dockerfile');
/** Grafana's default provisioning folder (GF_PATHS_PROVISIONING of the grafana/grafana image). */
const GRAFANA_PROVISIONING = '/etc/grafana/provisioning';

// ---------------------------------------------------------------------------------------------
// The metrics the node exports
// ---------------------------------------------------------------------------------------------

interface MetricInfo {
  type: string;
  labels: string[];
}
type Catalog = Map<string, MetricInfo>;

/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ['instance', 'job'];

async function exportedMetrics(): Promise<Catalog> {
  const metrics = new Metrics({ version: 'x', target: 'duckdb', eventLog: 'lmdb' });
  const catalog: Catalog = new Map();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    // getMetricsAsJSON lists only the label values set so far: the declared label names are on the metric object.
    const labelNames = (metrics.registry.getSingleMetric(m.name) as unknown as { labelNames?: unknown }).labelNames;
    if (!Array.isArray(labelNames)) throw new Error(`no labelNames on prom-client's metric ${m.name}`);
    catalog.set(m.name, { type: String(m.type), labels: labelNames.map(String) });
  }
  metrics.registry.clear();
  return catalog;
}

/** A series name as the expression writes it: the metric, and the histogram/summary series it names. */
function resolveSeries(name: string, catalog: Catalog): { metric: string; info: MetricInfo; suffix: '' | '_bucket' | '_sum' | '_count' } | string {
  const exact = catalog.get(name);
  if (exact && exact.type !== 'histogram') return { metric: name, info: exact, suffix: '' };
  if (exact) return `histogram "${name}" has no series of that name: use ${name}_bucket, _sum or _count`;
  const m = /^(.*)(_bucket|_sum|_count)$/.exec(name);
  const base = m ? catalog.get(m[1]) : undefined;
  if (m && base && (base.type === 'histogram' || (base.type === 'summary' && m[2] !== '_bucket'))) {
    return { metric: m[1], info: base, suffix: m[2] as '_bucket' | '_sum' | '_count' };
  }
  return `unknown metric "${name}" (not exported by the node)`;
}

// ---------------------------------------------------------------------------------------------
// A small PromQL parser: tokens, then a tree of selectors, calls, aggregations and operators
// ---------------------------------------------------------------------------------------------

type TokKind = 'ident' | 'num' | 'str' | 'var' | 'range' | 'punct' | 'op';
interface Tok {
  k: TokKind;
  v: string;
  pos: number;
}

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '#') {
      const nl = src.indexOf('\n', i);
      i = nl < 0 ? src.length : nl;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' && c !== '`' ? 2 : 1;
      if (j >= src.length) throw new SyntaxError(`unterminated string at ${i}`);
      out.push({ k: 'str', v: src.slice(i + 1, j), pos: i });
      i = j + 1;
      continue;
    }
    if (c === '[') {
      // A range or subquery: [5m], [$__rate_interval], [1h:1m].
      const j = src.indexOf(']', i);
      if (j < 0) throw new SyntaxError(`unclosed "[" at ${i}`);
      out.push({ k: 'range', v: src.slice(i + 1, j).trim(), pos: i });
      i = j + 1;
      continue;
    }
    const rest = src.slice(i);
    const match = (kind: TokKind, re: RegExp): boolean => {
      const m = re.exec(rest);
      if (!m) return false;
      out.push({ k: kind, v: m[0], pos: i });
      i += m[0].length;
      return true;
    };
    if (match('var', /^\$(?:\{[A-Za-z_]\w*(?::\w+)?\}|[A-Za-z_]\w*)/)) continue;
    if (match('num', /^(?:0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*)?)/)) continue;
    if (match('ident', /^[A-Za-z_:][A-Za-z0-9_:]*/)) continue;
    if (match('op', /^(?:==|!=|=~|!~|<=|>=|[-+*/%^<>=@])/)) continue;
    if ('(){},'.includes(c)) {
      out.push({ k: 'punct', v: c, pos: i });
      i++;
      continue;
    }
    throw new SyntaxError(`unexpected character "${c}" at ${i}`);
  }
  return out;
}

interface Matcher {
  label: string;
  op: string;
  value: string;
}
type Node =
  | { t: 'sel'; name?: string; matchers: Matcher[]; range?: string }
  | { t: 'call'; fn: string; args: Node[] }
  | { t: 'agg'; op: string; grouping?: { without: boolean; labels: string[] }; args: Node[] }
  | { t: 'bin'; op: string; lhs: Node; rhs: Node; matching?: { on: boolean; labels: string[]; group?: { left: boolean; labels: string[] } } }
  | { t: 'paren'; expr: Node }
  | { t: 'subquery'; expr: Node; range: string }
  | { t: 'scalar' }
  | { t: 'str'; v: string };

const AGGREGATORS = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio']);
const FUNCTIONS = new Set([
  'abs', 'absent', 'absent_over_time', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh', 'avg_over_time', 'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min',
  'cos', 'cosh', 'count_over_time', 'day_of_month', 'day_of_week', 'day_of_year', 'days_in_month', 'deg', 'delta', 'deriv', 'double_exponential_smoothing', 'exp',
  'floor', 'histogram_avg', 'histogram_count', 'histogram_fraction', 'histogram_quantile', 'histogram_stddev', 'histogram_stdvar', 'histogram_sum', 'holt_winters',
  'hour', 'idelta', 'increase', 'irate', 'label_join', 'label_replace', 'last_over_time', 'ln', 'log10', 'log2', 'mad_over_time', 'max_over_time', 'min_over_time',
  'minute', 'month', 'pi', 'predict_linear', 'present_over_time', 'quantile_over_time', 'rad', 'rate', 'resets', 'round', 'scalar', 'sgn', 'sin', 'sinh', 'sort',
  'sort_by_label', 'sort_by_label_desc', 'sort_desc', 'sqrt', 'stddev_over_time', 'stdvar_over_time', 'sum_over_time', 'tan', 'tanh', 'time', 'timestamp', 'vector', 'year',
]);
/** Functions that return a scalar or a vector without labels. */
const UNLABELLED = new Set(['scalar', 'time', 'pi', 'vector', 'absent', 'absent_over_time']);
const RATE_FUNCTIONS = new Set(['rate', 'irate', 'increase']);
const SYMBOL_OPS = new Set(['+', '-', '*', '/', '%', '^', '==', '!=', '<=', '>=', '<', '>']);
const WORD_OPS = new Set(['and', 'or', 'unless', 'atan2']);
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', ...WORD_OPS]);

class Parser {
  private i = 0;
  constructor(private readonly toks: Tok[]) {}

  parse(): Node {
    const node = this.expr();
    const left = this.peek();
    if (left) throw new SyntaxError(`unexpected "${left.v}" at ${left.pos}`);
    return node;
  }

  private peek(): Tok | undefined {
    return this.toks[this.i];
  }
  private next(): Tok {
    const t = this.toks[this.i++];
    if (!t) throw new SyntaxError('unexpected end of expression');
    return t;
  }
  private isPunct(v: string): boolean {
    const t = this.peek();
    return t?.k === 'punct' && t.v === v;
  }
  private isWord(...words: string[]): boolean {
    const t = this.peek();
    return t?.k === 'ident' && words.includes(t.v.toLowerCase());
  }
  private expectPunct(v: string): void {
    const t = this.next();
    if (t.k !== 'punct' || t.v !== v) throw new SyntaxError(`expected "${v}" at ${t.pos}, found "${t.v}"`);
  }

  private expr(): Node {
    let lhs = this.unary();
    for (;;) {
      const t = this.peek();
      if (!t || !((t.k === 'op' && SYMBOL_OPS.has(t.v)) || (t.k === 'ident' && WORD_OPS.has(t.v.toLowerCase())))) return lhs;
      this.next();
      if (this.isWord('bool')) this.next();
      let matching: Extract<Node, { t: 'bin' }>['matching'];
      if (this.isWord('on', 'ignoring')) {
        const on = this.next().v.toLowerCase() === 'on';
        matching = { on, labels: this.labelList() };
        if (this.isWord('group_left', 'group_right')) {
          const left = this.next().v.toLowerCase() === 'group_left';
          matching.group = { left, labels: this.isPunct('(') ? this.labelList() : [] };
        }
      }
      lhs = { t: 'bin', op: t.v.toLowerCase(), lhs, rhs: this.unary(), matching };
    }
  }

  private unary(): Node {
    const t = this.peek();
    if (t?.k === 'op' && (t.v === '-' || t.v === '+')) {
      this.next();
      return this.unary();
    }
    let node = this.primary();
    for (;;) {
      const p = this.peek();
      if (p?.k === 'range') {
        this.next();
        if (node.t === 'sel' && node.range === undefined && !p.v.includes(':')) node.range = p.v;
        else if (node.t !== 'sel' && node.t !== 'scalar' && node.t !== 'str' && p.v.includes(':')) node = { t: 'subquery', expr: node, range: p.v };
        else throw new SyntaxError(`misplaced range [${p.v}] at ${p.pos}`);
      } else if (this.isWord('offset')) {
        this.next();
        if (this.peek()?.k === 'op' && this.peek()?.v === '-') this.next();
        const d = this.next();
        if (d.k !== 'num' && d.k !== 'var') throw new SyntaxError(`expected a duration after offset at ${d.pos}`);
      } else if (p?.k === 'op' && p.v === '@') {
        this.next();
        this.primary();
      } else {
        return node;
      }
    }
  }

  private primary(): Node {
    const t = this.next();
    switch (t.k) {
      case 'num':
      case 'var':
        return { t: 'scalar' };
      case 'str':
        return { t: 'str', v: t.v };
      case 'punct':
        if (t.v === '(') {
          const expr = this.expr();
          this.expectPunct(')');
          return { t: 'paren', expr };
        }
        if (t.v === '{') return this.selector(undefined);
        throw new SyntaxError(`unexpected "${t.v}" at ${t.pos}`);
      case 'ident': {
        const low = t.v.toLowerCase();
        if (low === 'inf' || low === 'nan') return { t: 'scalar' };
        if (AGGREGATORS.has(low) && (this.isPunct('(') || this.isWord('by', 'without'))) return this.aggregation(low);
        if (KEYWORDS.has(low)) throw new SyntaxError(`unexpected keyword "${t.v}" at ${t.pos}`);
        if (this.isPunct('(')) {
          if (!FUNCTIONS.has(t.v)) throw new SyntaxError(`unknown function "${t.v}" at ${t.pos}`);
          this.next();
          return { t: 'call', fn: t.v, args: this.args() };
        }
        if (this.isPunct('{')) {
          this.next();
          return this.selector(t.v);
        }
        return { t: 'sel', name: t.v, matchers: [] };
      }
      default:
        throw new SyntaxError(`unexpected "${t.v}" at ${t.pos}`);
    }
  }

  /** After "{": label matchers up to "}". */
  private selector(name: string | undefined): Node {
    const matchers: Matcher[] = [];
    while (!this.isPunct('}')) {
      const label = this.next();
      if (label.k !== 'ident' && label.k !== 'str') throw new SyntaxError(`expected a label name at ${label.pos}, found "${label.v}"`);
      if (label.k === 'str' && (this.isPunct(',') || this.isPunct('}'))) {
        // Prometheus 3: {"metric.name"} names the metric.
        if (name !== undefined) throw new SyntaxError(`second metric name "${label.v}" at ${label.pos}`);
        name = label.v;
      } else {
        const op = this.next();
        if (op.k !== 'op' || !['=', '!=', '=~', '!~'].includes(op.v)) throw new SyntaxError(`expected a matcher operator at ${op.pos}, found "${op.v}"`);
        const value = this.next();
        if (value.k !== 'str') throw new SyntaxError(`expected a quoted label value at ${value.pos}, found "${value.v}"`);
        if (label.v === '__name__' && op.v === '=') {
          if (name !== undefined) throw new SyntaxError(`second metric name "${value.v}" at ${value.pos}`);
          name = value.v;
        } else {
          matchers.push({ label: label.v, op: op.v, value: value.v });
        }
      }
      if (!this.isPunct('}')) this.expectPunct(',');
    }
    this.expectPunct('}');
    if (name === undefined && matchers.length === 0) throw new SyntaxError('empty selector {}');
    return { t: 'sel', name, matchers };
  }

  private aggregation(op: string): Node {
    let grouping: { without: boolean; labels: string[] } | undefined;
    if (this.isWord('by', 'without')) grouping = { without: this.next().v.toLowerCase() === 'without', labels: this.labelList() };
    this.expectPunct('(');
    const args = this.args();
    if (this.isWord('by', 'without')) {
      if (grouping) throw new SyntaxError(`two groupings for ${op}`);
      grouping = { without: this.next().v.toLowerCase() === 'without', labels: this.labelList() };
    }
    if (args.length === 0) throw new SyntaxError(`${op}() without an argument`);
    return { t: 'agg', op, grouping, args };
  }

  /** After "(": arguments up to ")". */
  private args(): Node[] {
    const args: Node[] = [];
    while (!this.isPunct(')')) {
      args.push(this.expr());
      if (!this.isPunct(')')) this.expectPunct(',');
    }
    this.expectPunct(')');
    return args;
  }

  /** "(a, b)": label names (of by, without, on, ignoring, group_left, group_right). */
  private labelList(): string[] {
    this.expectPunct('(');
    const labels: string[] = [];
    while (!this.isPunct(')')) {
      const t = this.next();
      if (t.k !== 'ident' && t.k !== 'str') throw new SyntaxError(`expected a label name at ${t.pos}, found "${t.v}"`);
      labels.push(t.v);
      if (!this.isPunct(')')) this.expectPunct(',');
    }
    this.expectPunct(')');
    return labels;
  }
}

function parsePromQL(expr: string): Node {
  return new Parser(tokenize(expr)).parse();
}

// ---------------------------------------------------------------------------------------------
// Checks of one expression
// ---------------------------------------------------------------------------------------------

/** The labels a (sub)expression's series have: a set, or none at all (a scalar or string), or unknown after an error. */
type Labels = Set<string> | 'scalar' | 'unknown';

interface ExprCheck {
  problems: string[];
  /** The exported metrics the expression reads (histograms by their base name). */
  metrics: Set<string>;
  /** The labels of the expression's result. */
  labels: Labels;
}

const RATE_INTERVAL = '$__rate_interval';

function checkExpr(expr: string, catalog: Catalog, legendFormat?: string): ExprCheck {
  const problems: string[] = [];
  const metrics = new Set<string>();
  let root: Node;
  try {
    root = parsePromQL(expr);
  } catch (err) {
    return { problems: [`does not parse: ${(err as Error).message}`], metrics, labels: 'unknown' };
  }

  const names = (node: Node): string[] => {
    switch (node.t) {
      case 'sel': return node.name ? [node.name] : [];
      case 'call': case 'agg': return node.args.flatMap(names);
      case 'bin': return [...names(node.lhs), ...names(node.rhs)];
      case 'paren': case 'subquery': return names(node.expr);
      default: return [];
    }
  };
  const requireLabels = (labels: string[], available: Labels, where: string, node: Node): void => {
    if (!(available instanceof Set)) {
      if (available === 'scalar') problems.push(`${where} on an expression without labels`);
      return;
    }
    for (const l of labels) {
      if (!available.has(l)) problems.push(`${where}: "${l}" is not a label of ${names(node).join(', ') || 'the expression'} (labels: ${[...available].sort().join(', ')})`);
    }
  };

  /** Walks the tree: problems, and the labels of each node's result. `parent` is the enclosing call; `underQuantile` whether a histogram_quantile encloses the node. */
  const walk = (node: Node, parent: string | undefined, underQuantile: boolean): Labels => {
    switch (node.t) {
      case 'scalar':
      case 'str':
        return 'scalar';
      case 'paren':
        return walk(node.expr, parent, underQuantile);
      case 'subquery':
        walk(node.expr, undefined, underQuantile);
        return 'unknown';
      case 'sel': {
        if (node.name === undefined) {
          problems.push(`a selector without a metric name: {${node.matchers.map((m) => m.label).join(', ')}}`);
          return 'unknown';
        }
        const series = resolveSeries(node.name, catalog);
        if (typeof series === 'string') {
          problems.push(series);
          return 'unknown';
        }
        metrics.add(series.metric);
        const labels = new Set([...series.info.labels, ...TARGET_LABELS]);
        if (series.suffix === '_bucket') labels.add('le');
        for (const m of node.matchers) {
          if (!labels.has(m.label)) problems.push(`selector of ${node.name}: "${m.label}" is not one of its labels (${[...labels].sort().join(', ')})`);
        }
        const counting = series.info.type === 'counter' || series.suffix !== '';
        const inRate = parent !== undefined && RATE_FUNCTIONS.has(parent);
        if (counting) {
          if (!inRate || node.range !== RATE_INTERVAL) problems.push(`${node.name} is a counter: read it as rate(${node.name}[${RATE_INTERVAL}]) (found ${parent ?? 'no function'}${node.range === undefined ? '' : ` over [${node.range}]`})`);
        } else if (inRate) {
          problems.push(`${node.name} is a ${series.info.type}, not a counter: ${parent}() of it means nothing`);
        }
        if (series.suffix === '_bucket' && !underQuantile) problems.push(`${node.name} outside histogram_quantile()`);
        if (node.range !== undefined) labels.delete('__name__');
        return labels;
      }
      case 'call': {
        const quantile = node.fn === 'histogram_quantile';
        const argLabels = node.args.map((a) => walk(a, node.fn, underQuantile || quantile));
        if (quantile) {
          const over = argLabels[1];
          if (node.args.length !== 2) problems.push('histogram_quantile() takes two arguments');
          else if (over instanceof Set && !over.has('le')) problems.push(`histogram_quantile() over series without "le" (${names(node.args[1]).join(', ')}): keep le in the aggregation`);
          return over instanceof Set ? new Set([...over].filter((l) => l !== 'le')) : over ?? 'unknown';
        }
        if (UNLABELLED.has(node.fn)) return node.fn === 'scalar' || node.fn === 'time' || node.fn === 'pi' ? 'scalar' : new Set();
        const vector = argLabels.find((l) => l !== 'scalar') ?? 'unknown';
        if ((node.fn === 'label_replace' || node.fn === 'label_join') && vector instanceof Set && node.args[1]?.t === 'str') return new Set([...vector, node.args[1].v]);
        return vector;
      }
      case 'agg': {
        const argLabels = node.args.map((a) => walk(a, undefined, underQuantile));
        const input = argLabels[argLabels.length - 1];
        const vectorNode = node.args[node.args.length - 1];
        let out: Labels;
        if (node.grouping) {
          requireLabels(node.grouping.labels, input, `${node.op} ${node.grouping.without ? 'without' : 'by'} (${node.grouping.labels.join(', ')})`, vectorNode);
          if (!(input instanceof Set)) out = input === 'scalar' ? 'scalar' : 'unknown';
          else if (['topk', 'bottomk', 'limitk', 'limit_ratio'].includes(node.op)) out = input;
          else out = node.grouping.without ? new Set([...input].filter((l) => !node.grouping!.labels.includes(l))) : new Set(node.grouping.labels);
        } else {
          out = ['topk', 'bottomk', 'limitk', 'limit_ratio'].includes(node.op) ? input : new Set();
        }
        if (node.op === 'count_values' && out instanceof Set && node.args[0]?.t === 'str') out = new Set([...out, node.args[0].v]);
        return out;
      }
      case 'bin': {
        const lhs = walk(node.lhs, undefined, underQuantile);
        const rhs = walk(node.rhs, undefined, underQuantile);
        if (lhs === 'scalar') return rhs;
        if (rhs === 'scalar') return lhs;
        if (node.matching) {
          const clause = `${node.matching.on ? 'on' : 'ignoring'} (${node.matching.labels.join(', ')})`;
          requireLabels(node.matching.labels, lhs, clause, node.lhs);
          requireLabels(node.matching.labels, rhs, clause, node.rhs);
          if (node.matching.group) {
            const one = node.matching.group.left ? rhs : lhs;
            requireLabels(node.matching.group.labels, one, node.matching.group.left ? 'group_left' : 'group_right', node.matching.group.left ? node.rhs : node.lhs);
            const many = node.matching.group.left ? lhs : rhs;
            return many instanceof Set ? new Set([...many, ...node.matching.group.labels]) : many;
          }
        }
        if (node.op === 'or' && lhs instanceof Set && rhs instanceof Set) return new Set([...lhs, ...rhs]);
        return lhs;
      }
    }
  };

  const labels = walk(root, undefined, false);
  if (labels === 'scalar') problems.push('the expression is a scalar, not series');
  for (const m of (legendFormat ?? '').matchAll(/\{\{\s*([^}\s]+)\s*\}\}/g)) {
    if (labels instanceof Set && !labels.has(m[1])) problems.push(`legend "{{${m[1]}}}": not a label of the result (${[...labels].sort().join(', ') || 'none'})`);
  }
  return { problems, metrics, labels };
}

// ---------------------------------------------------------------------------------------------
// The dashboard: panels (also inside rows), targets, template variables
// ---------------------------------------------------------------------------------------------

interface DatasourceRef {
  type?: string;
  uid?: string;
}
interface Target {
  refId?: string;
  expr?: string;
  legendFormat?: string;
  datasource?: DatasourceRef;
}
interface Panel {
  id?: number;
  type?: string;
  title?: string;
  datasource?: DatasourceRef;
  gridPos?: { h?: number; w?: number; x?: number; y?: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name?: string;
  type?: string;
  query?: string | { query?: string };
  definition?: string;
  datasource?: DatasourceRef;
  current?: { value?: unknown };
}
interface Dashboard {
  uid?: string;
  title?: string;
  schemaVersion?: number;
  panels?: Panel[];
  templating?: { list?: Variable[] };
}

/** Every panel, rows included, and the panels inside rows (collapsed rows keep theirs in `panels`). */
function allPanels(d: Dashboard): Panel[] {
  const out: Panel[] = [];
  const add = (panels: Panel[] | undefined): void => {
    for (const p of panels ?? []) {
      out.push(p);
      add(p.panels);
    }
  };
  add(d.panels);
  return out;
}

/** Grafana's global variables, usable in any query. */
const BUILTIN_VARIABLES = new Set(['__rate_interval', '__interval', '__interval_ms', '__range', '__range_s', '__range_ms', '__from', '__to', '__dashboard', '__org', '__user']);

interface DashboardCheck {
  problems: string[];
  metrics: Set<string>;
  /** Every expression, where it is. */
  expressions: { where: string; expr: string }[];
}

/** `label_values(metric{...}, label)` or `label_values(label)`, `query_result(expr)`: the PromQL part and the label it reads. */
function variableQuery(query: string): { expr?: string; label?: string } | undefined {
  const lv = /^\s*label_values\(\s*(?:(.*\S)\s*,\s*)?([A-Za-z_]\w*)\s*\)\s*$/s.exec(query);
  if (lv) return { expr: lv[1], label: lv[2] };
  const qr = /^\s*query_result\((.*)\)\s*$/s.exec(query);
  if (qr) return { expr: qr[1] };
  return undefined;
}

function checkDashboard(d: Dashboard, catalog: Catalog, datasourceUid: string): DashboardCheck {
  const problems: string[] = [];
  const metrics = new Set<string>();
  const expressions: { where: string; expr: string }[] = [];
  const variables = d.templating?.list ?? [];
  const defined = new Set(variables.map((v) => v.name ?? ''));
  const dsVariables = variables.filter((v) => v.type === 'datasource').map((v) => v.name);
  // A panel names the datasource by the provisioned uid or through a datasource variable (${DS_PROMETHEUS}) whose default is that uid.
  const acceptedUids = new Set([datasourceUid, ...dsVariables.flatMap((n) => [`$${n}`, `\${${n}}`])]);
  for (const v of variables.filter((x) => x.type === 'datasource')) {
    if (v.current?.value !== datasourceUid) problems.push(`datasource variable ${v.name}: default ${JSON.stringify(v.current?.value)}, not the provisioned "${datasourceUid}"`);
  }
  const checkDatasource = (ds: DatasourceRef | undefined, where: string): void => {
    if (ds === undefined) return;
    if (ds.type !== undefined && ds.type !== 'prometheus') problems.push(`${where}: datasource type ${ds.type}`);
    if (!acceptedUids.has(ds.uid ?? '')) problems.push(`${where}: datasource uid ${JSON.stringify(ds.uid)} is neither "${datasourceUid}" nor a datasource variable`);
  };
  const checkVariablesUsed = (text: string, where: string): void => {
    for (const m of text.matchAll(/\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]/g)) {
      const name = m[1] ?? m[2] ?? m[3];
      if (!defined.has(name) && !BUILTIN_VARIABLES.has(name)) problems.push(`${where}: variable $${name} is not defined`);
    }
  };
  const addExpr = (expr: string, where: string, legend?: string): void => {
    expressions.push({ where, expr });
    checkVariablesUsed(expr, where);
    const r = checkExpr(expr, catalog, legend);
    for (const p of r.problems) problems.push(`${where}: ${p}  [${expr}]`);
    for (const m of r.metrics) metrics.add(m);
  };

  const ids = new Set<number>();
  for (const p of allPanels(d)) {
    const where = `panel ${p.id} "${p.title ?? ''}"`;
    if (typeof p.title !== 'string' || p.title.trim() === '') problems.push(`panel ${p.id}: no title`);
    if (typeof p.id !== 'number') problems.push(`${where}: no numeric id`);
    else if (ids.has(p.id)) problems.push(`${where}: id ${p.id} used twice`);
    else ids.add(p.id);
    const g = p.gridPos;
    if (!g || [g.h, g.w, g.x, g.y].some((n) => typeof n !== 'number') || g.x! < 0 || g.w! < 1 || g.x! + g.w! > 24) problems.push(`${where}: gridPos ${JSON.stringify(g)} is not inside the 24 columns`);
    if (p.type === 'row') {
      if ((p.targets ?? []).length > 0) problems.push(`${where}: a row with queries`);
      continue;
    }
    if ((p.panels ?? []).length > 0) problems.push(`${where}: panels inside a panel that is not a row`);
    checkDatasource(p.datasource, where);
    const exprs = (p.targets ?? []).filter((t) => typeof t.expr === 'string' && t.expr.trim() !== '');
    if (exprs.length === 0) problems.push(`${where}: no PromQL expression`);
    for (const t of p.targets ?? []) {
      if (typeof t.expr !== 'string' || t.expr.trim() === '') problems.push(`${where} target ${t.refId}: no expr`);
      else addExpr(t.expr, `${where} target ${t.refId}`, t.legendFormat);
      checkDatasource(t.datasource, `${where} target ${t.refId}`);
    }
  }

  for (const v of variables) {
    if (v.type !== 'query') continue;
    const where = `variable ${v.name}`;
    checkDatasource(v.datasource, where);
    const texts = [typeof v.query === 'string' ? v.query : v.query?.query, v.definition].filter((q): q is string => typeof q === 'string' && q !== '');
    if (texts.length === 0) problems.push(`${where}: no query`);
    for (const text of new Set(texts)) {
      const q = variableQuery(text);
      if (!q) {
        problems.push(`${where}: query ${JSON.stringify(text)} is neither label_values() nor query_result()`);
        continue;
      }
      if (q.expr === undefined) continue;
      checkVariablesUsed(q.expr, where);
      const r = checkExpr(q.expr, catalog);
      for (const p of r.problems) problems.push(`${where}: ${p}  [${q.expr}]`);
      for (const m of r.metrics) metrics.add(m);
      if (q.label !== undefined && r.labels instanceof Set && !r.labels.has(q.label)) problems.push(`${where}: "${q.label}" is not a label of ${q.expr}`);
      expressions.push({ where, expr: q.expr });
    }
  }
  return { problems, metrics, expressions };
}

// ---------------------------------------------------------------------------------------------
// Compose, Prometheus and Grafana provisioning files
// ---------------------------------------------------------------------------------------------

interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  ports?: unknown[];
  environment?: Record<string, unknown> | string[];
  volumes?: unknown[];
  healthcheck?: unknown;
  depends_on?: unknown;
}
interface ComposeFile {
  name?: string;
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

function loadYaml<T>(file: string): T {
  const doc = yaml.load(readFileSync(file, 'utf8'));
  if (!doc || typeof doc !== 'object') throw new Error(`${file} is not a YAML mapping`);
  return doc as T;
}

function environment(s: Service): Record<string, string> {
  const env = s.environment ?? {};
  if (Array.isArray(env)) return Object.fromEntries(env.map((e: string) => (e.includes('=') ? [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] : [e, ''])));
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]));
}

/** ENV of the Dockerfile's final stage (`ENV K=V K2=V2`). */
function dockerfileEnv(): Record<string, string> {
  const stages = readFileSync(DOCKERFILE, 'utf8').split(/^FROM\s/m);
  const env: Record<string, string> = {};
  for (const line of stages[stages.length - 1].split('\n')) {
    const m = /^ENV\s+(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[1].includes('=')) for (const pair of m[1].split(/\s+/)) env[pair.slice(0, pair.indexOf('='))] = pair.slice(pair.indexOf('=') + 1);
    else env[m[1].split(/\s+/)[0]] = m[1].split(/\s+/).slice(1).join(' ');
  }
  return env;
}

function ports(s: Service): { hostIp?: string; published?: number; target: number }[] {
  return (s.ports ?? []).map((p) => {
    if (typeof p === 'number') return { target: p };
    if (typeof p === 'string') {
      const parts = p.replace(/\/(tcp|udp)$/, '').split(':');
      const target = Number(parts[parts.length - 1]);
      if (parts.length === 1) return { target };
      return { hostIp: parts.length === 3 ? parts[0] : undefined, published: Number(parts[parts.length - 2]), target };
    }
    const long = p as { target: number | string; published?: number | string; host_ip?: string };
    return { hostIp: long.host_ip, published: long.published === undefined ? undefined : Number(long.published), target: Number(long.target) };
  });
}

/** A service's bind mounts of host files: container path -> host path (relative to the compose file's folder) and read-only. */
function bindMounts(s: Service, composeDir: string): Map<string, { host: string; readOnly: boolean }> {
  const out = new Map<string, { host: string; readOnly: boolean }>();
  for (const v of s.volumes ?? []) {
    if (typeof v === 'string') {
      const [source, target, mode] = v.split(':');
      if (target !== undefined && /^[./~]/.test(source)) out.set(posix.normalize(target), { host: resolve(composeDir, source), readOnly: (mode ?? '').split(',').includes('ro') });
    } else {
      const long = v as { type?: string; source?: string; target: string; read_only?: boolean };
      if (long.type === 'bind' && long.source) out.set(posix.normalize(long.target), { host: resolve(composeDir, long.source), readOnly: long.read_only === true });
    }
  }
  return out;
}

/** The host files a dashboard provider at `path` (a folder or a file inside the container) reads. */
function providedDashboards(path: string, mounts: Map<string, { host: string }>): string[] {
  const dir = posix.normalize(path).replace(/\/+$/, '');
  const hosts: string[] = [];
  for (const [target, { host }] of mounts) {
    if (!target.endsWith('.json')) continue;
    if (target === dir || target.startsWith(`${dir}/`)) hosts.push(host);
  }
  return hosts;
}

interface ScrapeConfig {
  job_name?: string;
  metrics_path?: string;
  scrape_interval?: string;
  scrape_timeout?: string;
  authorization?: unknown;
  static_configs?: { targets?: string[] }[];
}
interface PrometheusConfig {
  global?: { scrape_interval?: string; scrape_timeout?: string };
  scrape_configs?: ScrapeConfig[];
}

function seconds(duration: string | undefined): number {
  const m = /^(\d+)(ms|s|m|h)$/.exec(duration ?? '');
  if (!m) throw new Error(`not a duration: ${duration}`);
  return Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

/** The Sluice services of a compose file (built from the Dockerfile) that Prometheus does not scrape: "service:port" names. */
function unscrapedNodes(compose: ComposeFile, prometheus: PrometheusConfig): string[] {
  const targets = new Set((prometheus.scrape_configs ?? []).filter((c) => (c.metrics_path ?? '/metrics') === '/metrics').flatMap((c) => (c.static_configs ?? []).flatMap((s) => s.targets ?? [])));
  const missing: string[] = [];
  for (const [name, s] of Object.entries(compose.services)) {
    if (s.build === undefined) continue;
    const config = loadConfig([], { ...dockerfileEnv(), ...environment(s) });
    const expected = `${name}:${config.metricsPort ?? config.port}`;
    if (!targets.has(expected)) missing.push(expected);
  }
  return missing;
}

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

/** Metrics every dashboard must show (issue 15, item 5), besides every sluice_* metric. */
const REQUIRED_PROCESS_METRICS = ['process_cpu_seconds_total', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_p99_seconds'];

describe('the PromQL checker', async () => {
  const catalog = await exportedMetrics();
  const problems = (expr: string, legend?: string): string[] => checkExpr(expr, catalog, legend).problems;

  it('reads the metric names and label names of the node registry', () => {
    expect(catalog.get('sluice_ingest_records_total')).toEqual({ type: 'counter', labels: ['source', 'signal'] });
    expect(catalog.get('sluice_import_duration_seconds')?.type).toBe('histogram');
    expect(catalog.get('sluice_sink_records_failed_total')?.labels).toEqual(['source', 'sink', 'reason']);
    expect(catalog.has('process_cpu_seconds_total'), "prom-client's default metrics are in the registry").toBe(true);
    expect(catalog.get('nodejs_gc_duration_seconds')).toEqual({ type: 'histogram', labels: ['kind'] });
  });

  it('accepts well-formed queries of exported metrics, and finds their metrics', () => {
    const ok = [
      'sum by (source) (rate(sluice_ingest_records_total{instance=~"$instance", source=~"$source"}[$__rate_interval]))',
      'sum(rate(sluice_ingest_records_total[$__rate_interval])) by (source, signal)',
      'histogram_quantile(0.99, sum by (le, route) (rate(sluice_ingest_request_duration_seconds_bucket[$__rate_interval])))',
      'histogram_quantile(0.5, sum without (instance, job) (rate(sluice_import_duration_seconds_bucket[$__rate_interval])))',
      'sum(rate(sluice_import_duration_seconds_sum[$__rate_interval])) / sum(rate(sluice_import_duration_seconds_count[$__rate_interval]))',
      'max by (source, sink) (sluice_sink_lag_seconds{source="a(b|c){1}", sink!~"sluice_made_up_total"})',
      'sluice_sink_lag_records > 1000',
      '-sluice_log_bytes offset 5m',
      'sluice_build_info * on (instance) group_left (version) sluice_build_info',
      'label_replace(sluice_log_bytes, "topic", "$1", "source", "(.*)")',
      'nodejs_eventloop_lag_p99_seconds',
    ];
    for (const expr of ok) expect(problems(expr), expr).toEqual([]);
    expect([...checkExpr(ok[2], catalog).metrics]).toEqual(['sluice_ingest_request_duration_seconds']);
    expect([...checkExpr(ok[4], catalog).metrics]).toEqual(['sluice_import_duration_seconds']);
    // Names inside strings are label values, not metrics.
    expect([...checkExpr(ok[5], catalog).metrics]).toEqual(['sluice_sink_lag_seconds']);
    expect(checkExpr(ok[0], catalog).labels).toEqual(new Set(['source']));
    expect(checkExpr(ok[8], catalog).labels).toEqual(new Set(['version', 'target', 'event_log', 'instance', 'job']));
  });

  it('rejects metrics the node does not export', () => {
    expect(problems('rate(sluice_made_up_total[$__rate_interval])')).toEqual(['unknown metric "sluice_made_up_total" (not exported by the node)']);
    expect(problems('sum by (source) (sluice_sink_lag_record)').join()).toMatch(/unknown metric "sluice_sink_lag_record"/);
    expect(problems('sluice_sink_lag_records / sluice_made_up').join()).toMatch(/unknown metric "sluice_made_up"/);
    expect(problems('{__name__="sluice_made_up"}').join()).toMatch(/unknown metric/);
    expect(problems('{source="a"}').join()).toMatch(/without a metric name/);
    // A histogram exports _bucket, _sum and _count only; gauges and counters have no _bucket.
    expect(problems('sluice_import_duration_seconds').join()).toMatch(/has no series of that name/);
    expect(problems('histogram_quantile(0.5, rate(sluice_sink_lag_records_bucket[$__rate_interval]))').join()).toMatch(/unknown metric "sluice_sink_lag_records_bucket"/);
  });

  it('rejects labels a metric does not have, in selectors, groupings, matching and legends', () => {
    expect(problems('sluice_log_bytes{sink="x"}').join()).toMatch(/"sink" is not one of its labels/);
    expect(problems('sum by (sink) (rate(sluice_ingest_records_total[$__rate_interval]))').join()).toMatch(/sum by \(sink\): "sink" is not a label of sluice_ingest_records_total/);
    expect(problems('sum without (table) (sluice_sink_files)').join()).toMatch(/"table" is not a label/);
    expect(problems('sum by (source) (sum by (sink) (sluice_sink_lag_records))').join(), 'the inner sum dropped source').toMatch(/"source" is not a label/);
    expect(problems('sluice_sink_lag_records / on (table) sluice_sink_lag_seconds').join()).toMatch(/on \(table\): "table" is not a label/);
    expect(problems('sum by (status) (rate(sluice_ingest_requests_total[$__rate_interval]))', '{{route}}').join()).toMatch(/legend "\{\{route\}\}": not a label of the result/);
    expect(problems('sluice_sink_lag_records * on (instance) group_left (flavour) sluice_build_info').join()).toMatch(/group_left: "flavour" is not a label of sluice_build_info/);
    // le belongs to buckets only.
    expect(problems('sum by (le) (sluice_sink_lag_records)').join()).toMatch(/"le" is not a label/);
  });

  it('rejects counters outside rate() over $__rate_interval, and gauges inside it', () => {
    expect(problems('sluice_ingest_records_total').join()).toMatch(/is a counter/);
    expect(problems('sum(sluice_ingest_records_total)').join()).toMatch(/is a counter/);
    expect(problems('rate(sluice_ingest_records_total[5m])').join()).toMatch(/is a counter: read it as rate\(sluice_ingest_records_total\[\$__rate_interval\]\) \(found rate over \[5m\]\)/);
    expect(problems('delta(sluice_ingest_records_total[$__rate_interval])').join()).toMatch(/is a counter/);
    expect(problems('sum(sluice_import_duration_seconds_count)').join()).toMatch(/is a counter/);
    expect(problems('rate(sluice_sink_lag_records[$__rate_interval])').join()).toMatch(/is a gauge, not a counter/);
  });

  it('rejects buckets outside histogram_quantile() and quantiles that dropped le', () => {
    expect(problems('sum by (le) (rate(sluice_import_duration_seconds_bucket[$__rate_interval]))').join()).toMatch(/outside histogram_quantile/);
    expect(problems('histogram_quantile(0.9, sum by (route) (rate(sluice_ingest_request_duration_seconds_bucket[$__rate_interval])))').join()).toMatch(/without "le"/);
    expect(problems('histogram_quantile(0.9, sum(rate(sluice_import_duration_seconds_bucket[$__rate_interval])))').join()).toMatch(/without "le"/);
  });

  it('rejects what does not parse and unknown functions', () => {
    expect(problems('sum(rate(sluice_ingest_records_total[$__rate_interval])').join()).toMatch(/does not parse/);
    expect(problems('rates(sluice_ingest_records_total[$__rate_interval])').join()).toMatch(/unknown function "rates"/);
    expect(problems('sluice_log_bytes{source="a"').join()).toMatch(/does not parse/);
    expect(problems('sluice_log_bytes{source=a}').join()).toMatch(/quoted label value/);
    expect(problems('sluice_log_bytes sluice_sink_files').join()).toMatch(/unexpected "sluice_sink_files"/);
    expect(problems('by (source) sluice_log_bytes').join()).toMatch(/unexpected keyword "by"/);
    expect(problems('sluice_log_bytes offset').join()).toMatch(/does not parse: unexpected end/);
    expect(problems('0.5').join()).toMatch(/scalar/);
  });
});

describe('the Grafana dashboard', async () => {
  const catalog = await exportedMetrics();
  const text = readFileSync(DASHBOARD, 'utf8');
  const dashboard = JSON.parse(text) as Dashboard;
  const datasources = loadYaml<{ datasources?: { uid?: string; type?: string; url?: string; jsonData?: { timeInterval?: string } }[] }>(DATASOURCES).datasources ?? [];
  const prometheusUid = datasources.find((d) => d.type === 'prometheus')?.uid ?? '';
  const result = checkDashboard(dashboard, catalog, prometheusUid);
  const clone = (): Dashboard => JSON.parse(text) as Dashboard;

  it('is a dashboard of rows and panels with a title, uid and schema version', () => {
    expect(dashboard.title).toBe('Sluice');
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const panels = allPanels(dashboard);
    expect(panels.filter((p) => p.type === 'row').length).toBeGreaterThanOrEqual(7);
    expect(panels.filter((p) => p.type !== 'row').length).toBeGreaterThanOrEqual(25);
    expect(panels.some((p) => p.type === 'row' && (p.panels ?? []).length > 0), 'a collapsed row keeps its panels (and they are checked)').toBe(true);
  });

  it('uses only exported metrics and their labels, counters through rate(), histograms through histogram_quantile()', () => {
    expect(prometheusUid).not.toBe('');
    expect(result.problems).toEqual([]);
    // Every panel's target and every query variable was read.
    const targets = allPanels(dashboard).flatMap((p) => p.targets ?? []).length;
    const queryVariables = (dashboard.templating?.list ?? []).filter((v) => v.type === 'query').length;
    expect(queryVariables).toBeGreaterThanOrEqual(3);
    expect(result.expressions.length).toBe(targets + queryVariables);
  });

  it('has a node, source and sink variable from label values, and a datasource variable defaulting to the provisioned Prometheus', () => {
    const variables = dashboard.templating?.list ?? [];
    const byName = (n: string): Variable | undefined => variables.find((v) => v.name === n);
    expect(byName('instance')?.definition).toMatch(/^label_values\(.*, instance\)$/);
    expect(byName('source')?.definition).toMatch(/^label_values\(.*, source\)$/);
    expect(byName('sink')?.definition).toMatch(/^label_values\(.*, sink\)$/);
    expect(byName('DS_PROMETHEUS')).toMatchObject({ type: 'datasource', query: 'prometheus', current: { value: prometheusUid } });
    // The panels filter by the variables.
    const all = result.expressions.map((e) => e.expr).join('\n');
    for (const v of ['instance', 'source', 'sink']) expect(all).toContain(`$${v}`);
  });

  it('shows every sluice_ metric and the process metrics', () => {
    const sluiceMetrics = [...catalog.keys()].filter((n) => n.startsWith('sluice_'));
    expect(sluiceMetrics.length).toBeGreaterThan(20);
    expect(sluiceMetrics.filter((m) => !result.metrics.has(m)), 'metrics of src/observability/metrics.ts without a panel').toEqual([]);
    expect(REQUIRED_PROCESS_METRICS.filter((m) => !result.metrics.has(m))).toEqual([]);
  });

  it('rejects a made-up metric, a wrong label, a panel without title or query, also inside a collapsed row', () => {
    const expectProblem = (d: Dashboard, re: RegExp): void => {
      const problems = checkDashboard(d, catalog, prometheusUid).problems;
      expect(problems.join('\n')).toMatch(re);
    };
    const firstTimeseries = (d: Dashboard): Panel => allPanels(d).find((p) => p.type === 'timeseries')!;
    const nested = (d: Dashboard): Panel => allPanels(d).find((p) => p.type === 'row' && (p.panels ?? []).length > 0)!.panels![0];

    let d = clone();
    firstTimeseries(d).targets![0].expr = 'sum(rate(sluice_made_up_total[$__rate_interval]))';
    expectProblem(d, /unknown metric "sluice_made_up_total"/);
    d = clone();
    nested(d).targets![0].expr = 'sum(rate(sluice_made_up_total[$__rate_interval]))';
    expectProblem(d, /unknown metric "sluice_made_up_total"/);
    d = clone();
    firstTimeseries(d).targets![0].expr = 'sum by (table) (rate(sluice_ingest_records_total[$__rate_interval]))';
    expectProblem(d, /"table" is not a label/);
    d = clone();
    delete firstTimeseries(d).title;
    expectProblem(d, /no title/);
    d = clone();
    nested(d).targets = [];
    expectProblem(d, /no PromQL expression/);
    d = clone();
    firstTimeseries(d).targets![0].expr = 'sum(rate(sluice_ingest_records_total{source=~"$nope"}[$__rate_interval]))';
    expectProblem(d, /variable \$nope is not defined/);
    d = clone();
    firstTimeseries(d).datasource = { type: 'prometheus', uid: 'other' };
    expectProblem(d, /datasource uid "other"/);
    d = clone();
    d.templating!.list!.find((v) => v.name === 'sink')!.definition = 'label_values(sluice_sink_lag_records, table)';
    expectProblem(d, /"table" is not a label of sluice_sink_lag_records/);
    d = clone();
    d.templating!.list!.find((v) => v.name === 'source')!.query = 'label_values(sluice_made_up, source)';
    expectProblem(d, /variable source: unknown metric "sluice_made_up"/);
    d = clone();
    allPanels(d).filter((p) => p.type !== 'row')[1].id = firstTimeseries(d).id;
    expectProblem(d, /used twice/);
    expect(checkDashboard(clone(), catalog, 'another-uid').problems.join('\n')).toMatch(/default "prometheus", not the provisioned "another-uid"/);
  });
});

describe('the observability compose file, Prometheus and Grafana provisioning', () => {
  const compose = loadYaml<ComposeFile>(COMPOSE);
  const prometheus = loadYaml<PrometheusConfig>(PROMETHEUS);
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  const datasources = loadYaml<{ apiVersion?: number; datasources?: { name?: string; uid?: string; type?: string; url?: string; jsonData?: { timeInterval?: string } }[] }>(DATASOURCES);
  const providers = loadYaml<{ apiVersion?: number; providers?: { name?: string; type?: string; options?: { path?: string } }[] }>(DASHBOARDS);
  const grafana = compose.services.grafana;
  const grafanaMounts = bindMounts(grafana, DOCKER);

  it('runs one Sluice node built like docker/compose.yaml, Prometheus and Grafana, pinned, under a project name of its own', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['grafana', 'prometheus', 'sluice']);
    expect(compose.services.sluice.build).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' });
    expect(existsSync(resolve(DOCKER, '..', 'docker/Dockerfile'))).toBe(true);
    expect(compose.services.prometheus.image).toMatch(/^prom\/prometheus:v\d+\.\d+\.\d+$/);
    expect(grafana.image).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
    const others = readdirSync(DOCKER).filter((f) => /^compose.*\.ya?ml$/.test(f) && join(DOCKER, f) !== COMPOSE);
    expect(others.length).toBeGreaterThanOrEqual(2);
    const otherNames = others.map((f) => loadYaml<ComposeFile>(join(DOCKER, f)).name ?? 'docker');
    expect(compose.name).toMatch(/^[a-z0-9][a-z0-9_-]*$/);
    expect(otherNames).not.toContain(compose.name);
    // The node's configuration is one the node accepts, with public URLs on the published port.
    const node = compose.services.sluice;
    const config = loadConfig([], { ...dockerfileEnv(), ...environment(node) });
    const [published] = ports(node);
    expect(published.target).toBe(config.port);
    expect(new URL(config.publicApiUrl).port).toBe(String(published.published));
    expect(new URL(config.publicIngestUrl).port).toBe(String(published.published));
  });

  it("keeps docker/compose.yaml's healthcheck of the Sluice node", () => {
    const single = loadYaml<ComposeFile>(join(DOCKER, 'compose.yaml')).services.sluice;
    expect(compose.services.sluice.healthcheck).toEqual(single.healthcheck);
    // Without one of its own, the node is checked by the Dockerfile's HEALTHCHECK.
    if (single.healthcheck === undefined) expect(readFileSync(DOCKERFILE, 'utf8')).toMatch(/^HEALTHCHECK\s+(?!NONE)/m);
  });

  it('publishes host ports no other compose file in docker/ uses, Prometheus and Grafana on loopback', () => {
    const taken = readdirSync(DOCKER)
      .filter((f) => /^compose.*\.ya?ml$/.test(f) && join(DOCKER, f) !== COMPOSE)
      .flatMap((f) => Object.values(loadYaml<ComposeFile>(join(DOCKER, f)).services).flatMap((s) => ports(s).map((p) => p.published)));
    expect(taken).toContain(8000);
    const mine = Object.values(compose.services).flatMap((s) => ports(s).map((p) => p.published));
    expect(mine.filter((p) => taken.includes(p)), 'ports used by another compose file').toEqual([]);
    expect(ports(compose.services.prometheus)).toEqual([{ hostIp: '127.0.0.1', published: 9090, target: 9090 }]);
    expect(ports(grafana)).toEqual([{ hostIp: '127.0.0.1', published: 3000, target: 3000 }]);
  });

  it('scrapes the Sluice service at the port it listens on, every 5 seconds', () => {
    expect(seconds(prometheus.global?.scrape_interval)).toBe(5);
    expect(seconds(prometheus.global?.scrape_timeout ?? '10s')).toBeLessThanOrEqual(seconds(prometheus.global?.scrape_interval));
    expect(unscrapedNodes(compose, prometheus)).toEqual([]);
    const job = prometheus.scrape_configs?.find((c) => c.job_name === 'sluice');
    expect(job?.static_configs?.[0].targets).toEqual(['sluice:8000']);
    // No token on the node, no authorization in Prometheus (and the other way round).
    expect(environment(compose.services.sluice).SLUICE_METRICS_TOKEN === undefined).toBe(job?.authorization === undefined);
    // The check fails for a port or a service that is not the node's.
    expect(unscrapedNodes(compose, { scrape_configs: [{ static_configs: [{ targets: ['sluice:9000'] }] }] })).toEqual(['sluice:8000']);
    expect(unscrapedNodes(compose, { scrape_configs: [{ static_configs: [{ targets: ['sluice-1:8000'] }] }] })).toEqual(['sluice:8000']);
    expect(unscrapedNodes(compose, { scrape_configs: [{ metrics_path: '/stats', static_configs: [{ targets: ['sluice:8000'] }] }] })).toEqual(['sluice:8000']);
    const metricsPort = { ...compose, services: { sluice: { ...compose.services.sluice, environment: { ...environment(compose.services.sluice), SLUICE_METRICS_PORT: '9464' } } } };
    expect(unscrapedNodes(metricsPort, prometheus)).toEqual(['sluice:9464']);
    // Prometheus reads the file: mounted read-only where the image looks for it.
    expect(bindMounts(compose.services.prometheus, DOCKER).get('/etc/prometheus/prometheus.yml')).toEqual({ host: PROMETHEUS, readOnly: true });
  });

  it('provisions the Prometheus datasource at the compose service, with the uid the dashboard uses', () => {
    expect(datasources.apiVersion).toBe(1);
    const ds = datasources.datasources ?? [];
    expect(ds).toHaveLength(1);
    expect(ds[0].type).toBe('prometheus');
    const url = new URL(ds[0].url ?? '');
    expect(Object.keys(compose.services)).toContain(url.hostname);
    expect(ports(compose.services[url.hostname]).map((p) => p.target)).toContain(Number(url.port));
    // $__rate_interval is computed from the scrape interval Grafana is told.
    expect(ds[0].jsonData?.timeInterval).toBe(prometheus.global?.scrape_interval);
    // The dashboard's datasource variable defaults to this uid, and its panels name it or the variable.
    const dsVariable = (dashboard.templating?.list ?? []).find((v) => v.type === 'datasource');
    expect(dsVariable?.current?.value).toBe(ds[0].uid);
    const uids = new Set(allPanels(dashboard).filter((p) => p.type !== 'row').flatMap((p) => [p.datasource?.uid, ...(p.targets ?? []).map((t) => t.datasource?.uid)]));
    expect([...uids]).toEqual([`\${${dsVariable?.name}}`]);
    expect(grafanaMounts.get(posix.join(GRAFANA_PROVISIONING, 'datasources/prometheus.yml'))).toEqual({ host: DATASOURCES, readOnly: true });
  });

  it('provisions the dashboard file from the path the provider reads, and opens on it', () => {
    expect(providers.apiVersion).toBe(1);
    const [provider] = providers.providers ?? [];
    expect(provider.type).toBe('file');
    expect(grafanaMounts.get(posix.join(GRAFANA_PROVISIONING, 'dashboards/sluice.yml'))).toEqual({ host: DASHBOARDS, readOnly: true });
    expect(providedDashboards(provider.options?.path ?? '', grafanaMounts)).toEqual([DASHBOARD]);
    const dashboardMount = [...grafanaMounts].find(([, m]) => m.host === DASHBOARD);
    expect(dashboardMount?.[1].readOnly).toBe(true);
    // A provider path elsewhere finds nothing.
    expect(providedDashboards('/var/lib/grafana/dashboards', grafanaMounts)).toEqual([]);
    // The home page is the dashboard; anonymous users view it.
    const env = environment(grafana);
    expect(env.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(dashboardMount?.[0]);
    expect(env.GF_AUTH_ANONYMOUS_ENABLED).toBe('true');
    expect(env.GF_AUTH_ANONYMOUS_ORG_ROLE).toBe('Viewer');
    for (const [target, m] of grafanaMounts) expect(existsSync(m.host), `${target}: ${m.host}`).toBe(true);
    expect(dirname(DASHBOARD)).toBe(join(DOCKER, 'grafana'));
  });
});
