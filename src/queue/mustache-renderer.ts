import Mustache from 'mustache';

/** One substituted variable, as the job result lists it. */
export interface ReplacedValue {
  name: string;
  value: string;
}

export interface RenderResult {
  /** The rendered JSON text (not parsed yet). */
  text: string;
  /** The placeholders that had a value, in order of first use. */
  replaced: ReplacedValue[];
  /** The placeholders without a value (rendered as ""), in order of first use. */
  missing: string[];
}

/**
 * A value inserted into a JSON string: JSON string escaping without the surrounding quotes, so
 * that quotes, backslashes and newlines in values keep the document valid.
 */
export function escapeJsonString(value: unknown): string {
  return JSON.stringify(String(value)).slice(1, -1);
}

/**
 * Vault placeholders `{{ vault.NAME }}` (not triple braces). Sluice has no Vault, so each one
 * renders empty and is reported missing, before the variables' own placeholders.
 */
const VAULT = /(?<!\{)\{\{\s*(vault\.[a-zA-Z0-9_-]+)\s*\}\}/g;

export function renderVault(template: string): { text: string; missing: string[] } {
  const missing: string[] = [];
  const text = template.replace(VAULT, (_m, name: string) => {
    if (!missing.includes(name)) missing.push(name);
    return '';
  });
  return { text, missing };
}

/**
 * Renders `template` (a JSON text) as one Mustache template with the values: `{{x}}` and
 * `{{ x }}` insert the JSON-escaped value, `{{{x}}}` / `{{& x}}` the raw value; sections,
 * comments and delimiter changes are standard Mustache; substituted values are not rendered
 * again. Which names were replaced and which had no value is tracked per tag.
 */
export function renderTemplate(template: string, values: ReadonlyMap<string, string>): RenderResult {
  // A prototype-less view: "{{constructor}}" must not find Object.prototype members.
  const view: Record<string, string> = Object.create(null);
  for (const [name, value] of values) view[name] = value;

  const replaced = new Map<string, string>();
  const missing: string[] = [];
  const track = (name: string, value: unknown): void => {
    if (value === undefined || value === null) {
      if (!missing.includes(name)) missing.push(name);
    } else if (!replaced.has(name)) {
      replaced.set(name, String(value));
    }
  };

  // A fresh writer per render: its template cache dies with it (configurations are many and
  // large; mustache's global cache would keep every one of them).
  const writer = new Mustache.Writer();
  const escape = escapeJsonString;
  writer.escapedValue = (token, context) => {
    const value = context.lookup(token[1]);
    track(token[1], value);
    return value === undefined || value === null ? '' : escape(value);
  };
  writer.unescapedValue = (token, context) => {
    const value = context.lookup(token[1]);
    track(token[1], value);
    return value === undefined || value === null ? '' : String(value);
  };
  const text = writer.render(template, view, undefined, { escape });
  return { text, replaced: [...replaced].map(([name, value]) => ({ name, value })), missing };
}

/**
 * PHP's json_last_error_msg() for a text that JSON.parse rejected, as the reference's messages
 * quote it: a raw control character inside a string, or any other syntax error.
 */
export function phpJsonError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (/control character/i.test(message)) return 'Control character error, possibly incorrectly encoded';
  return 'Syntax error';
}
