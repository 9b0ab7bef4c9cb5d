/**
 * Variable resolution, after the reference's MustacheRendererTest and the
 * case table of ConfigurationVariablesResolverTest: rendering, precedence, and every message.
 */
import { describe, expect, it } from 'vitest';
import { escapeJsonString, renderTemplate } from '../../../src/queue/mustache-renderer.js';
import { resolveVariables, VariableResolutionError, type JsonObject, type VariablesStore } from '../../../src/queue/variables.js';
import { validateInlineValues, validateVariableValues, validateVariablesConfiguration } from '../../../src/queue/variables-validation.js';

/** A store with one variables configuration "vars" (declaring `declared`) and its values rows. */
function store(declared: unknown, rows: Record<string, unknown> = {}): VariablesStore {
  return {
    variablesConfiguration: (id) => (id === 'vars' ? (declared as JsonObject) : undefined),
    valuesRow: (variablesId, rowId) => (variablesId === 'vars' && rowId in rows ? (rows[rowId] as JsonObject) : undefined),
  };
}

const declare = (...names: string[]) => ({ variables: names.map((name) => ({ name, type: 'string' })) });
const values = (v: Record<string, string>) => ({ values: Object.entries(v).map(([name, value]) => ({ name, value })) });

function fails(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(VariableResolutionError);
    return (err as Error).message;
  }
  throw new Error('expected the resolution to fail');
}

describe('rendering', () => {
  const render = (template: unknown, v: Record<string, string>) =>
    renderTemplate(JSON.stringify(template), new Map(Object.entries(v)));

  it('replaces placeholders with and without spaces, repeatedly', () => {
    const r = render({ a: '{{foo}} and {{ foo }}', b: '{{bar}}' }, { foo: 'x', bar: 'y' });
    expect(JSON.parse(r.text)).toEqual({ a: 'x and x', b: 'y' });
    expect(r.replaced).toEqual([{ name: 'foo', value: 'x' }, { name: 'bar', value: 'y' }]);
    expect(r.missing).toEqual([]);
  });

  it('renders a missing placeholder empty and reports it', () => {
    const r = render({ a: 'x{{missing}}y' }, {});
    expect(JSON.parse(r.text)).toEqual({ a: 'xy' });
    expect(r.missing).toEqual(['missing']);
  });

  it('keeps the JSON valid for quotes, backslashes, newlines, braces and apostrophes', () => {
    const special = 'special " \\ \n { } \' characters';
    expect(JSON.parse(render({ a: '{{v}}' }, { v: special }).text)).toEqual({ a: special });
  });

  it('renders a value of one double quote as a double quote', () => {
    expect(JSON.parse(render({ a: '{{v}}' }, { v: '"' }).text)).toEqual({ a: '"' });
  });

  it('escapes as JSON without the surrounding quotes', () => {
    expect(escapeJsonString('a"b\nc')).toBe('a\\"b\\nc');
  });

  it('works anywhere in the document, including keys', () => {
    expect(JSON.parse(render({ '{{k}}': ['{{v}}'] }, { k: 'key', v: 'value' }).text)).toEqual({ key: ['value'] });
  });

  it('does not render substituted values again, nor find prototype members', () => {
    expect(JSON.parse(render({ a: '{{v}}', b: '{{constructor}}' }, { v: '{{other}}' }).text)).toEqual({ a: '{{other}}', b: '' });
  });

  it('supports a delimiter change to keep literal braces', () => {
    const r = render({ a: '{{=<< >>=}}{{ as-is }} <<v>><<={{ }}=>>' }, { v: 'x' });
    expect(JSON.parse(r.text)).toEqual({ a: '{{ as-is }} x' });
  });
});

describe('resolution', () => {
  const configuration = { variables_id: 'vars', parameters: { q: 'SELECT {{foo}}' } };

  it('uses inline values', () => {
    const r = resolveVariables({ configuration, variableValuesData: values({ foo: 'bar' }) }, store(declare('foo')));
    expect(r.configuration).toEqual({ variables_id: 'vars', parameters: { q: 'SELECT bar' } });
    expect(r.replaced).toEqual([{ name: 'foo', value: 'bar' }]);
    expect(r.messages).toEqual(['Replacing variables using inline values.', 'Replaced values for variables: foo']);
  });

  it('uses the job\'s values row', () => {
    const r = resolveVariables({ configuration, variableValuesId: 'row1' }, store(declare('foo'), { row1: values({ foo: 'one' }) }));
    expect(r.configuration.parameters).toEqual({ q: 'SELECT one' });
    expect(r.messages[0]).toBe('Replacing variables using values with ID: "row1".');
  });

  it('uses the default values row, and says so without a trailing period', () => {
    const r = resolveVariables({ configuration: { ...configuration, variables_values_id: 'def' } },
      store(declare('foo'), { def: values({ foo: 'default' }) }));
    expect(r.configuration.parameters).toEqual({ q: 'SELECT default' });
    expect(r.messages[0]).toBe('Replacing variables using default values with ID: "def"');
    expect(r.configuration.variables_values_id).toBe('def');
  });

  it('prefers the job\'s values row over an invalid default', () => {
    const r = resolveVariables({ configuration: { ...configuration, variables_values_id: 'not-used' }, variableValuesId: 'row1' },
      store(declare('foo'), { row1: values({ foo: 'one' }) }));
    expect(r.configuration.parameters).toEqual({ q: 'SELECT one' });
  });

  it('accepts an empty values array together with a values id', () => {
    const r = resolveVariables({ configuration, variableValuesId: 'row1', variableValuesData: { values: [] } },
      store(declare('foo'), { row1: values({ foo: 'one' }) }));
    expect(r.configuration.parameters).toEqual({ q: 'SELECT one' });
  });

  it('leaves a configuration without variables_id unchanged', () => {
    const plain = { parameters: { q: '{{ foo }}' } };
    const r = resolveVariables({ configuration: plain }, store(undefined));
    expect(r.configuration).toBe(plain);
    expect(r.messages).toEqual([]);
  });

  it('casts a stored integer value to a string', () => {
    const s: VariablesStore = {
      variablesConfiguration: () => ({ variables: [{ name: '4321', type: 'int' }] }),
      valuesRow: () => ({ values: [{ name: '4321', value: 1234 }] }),
    };
    const r = resolveVariables({ configuration: { variables_id: 'vars', variables_values_id: 'r', parameters: { n: '{{ 4321 }}' } } }, s);
    expect(r.configuration.parameters).toEqual({ n: '1234' });
  });

  it('uses supplied but undeclared values when referenced; declared but unused is fine', () => {
    const r = resolveVariables({ configuration: { variables_id: 'vars', parameters: { a: '{{extra}}' } }, variableValuesData: values({ foo: 'f', extra: 'e' }) },
      store(declare('foo')));
    expect(r.configuration.parameters).toEqual({ a: 'e' });
  });
});

describe('resolution errors (every message of the reference)', () => {
  const configuration = { variables_id: 'vars', parameters: { q: '{{foo}}' } };

  it('both a values id and inline values, even without variables_id', () => {
    expect(fails(() => resolveVariables({ configuration: {}, variableValuesId: '1', variableValuesData: values({ a: 'b' }) }, store(undefined))))
      .toBe('Only one of variableValuesId and variableValuesData can be entered.');
  });

  it('a variables configuration that does not exist', () => {
    expect(fails(() => resolveVariables({ configuration: { variables_id: 'non-existent' }, variableValuesData: values({ a: 'b' }) }, store(undefined))))
      .toBe('Variable configuration cannot be read: Configuration "non-existent" not found');
  });

  it('an invalid variables configuration', () => {
    expect(fails(() => resolveVariables({ configuration }, store({ variables: [], invalid: 'x' }))))
      .toBe('Variable configuration is invalid: Unrecognized option "invalid" under "configuration". Available option is "variables".');
    expect(fails(() => resolveVariables({ configuration }, store({ variables: [{ name: 'a' }] }))))
      .toBe('Variable configuration is invalid: The child config "type" under "configuration.variables.0" must be configured.');
  });

  it('no values from anywhere', () => {
    expect(fails(() => resolveVariables({ configuration }, store(declare('foo')))))
      .toBe('No variable values provided for variables configuration "vars".');
  });

  it('a values row that cannot be read', () => {
    expect(fails(() => resolveVariables({ configuration, variableValuesId: 'nope' }, store(declare('foo')))))
      .toBe('Cannot read variable values "nope" of variables configuration "vars".');
    expect(fails(() => resolveVariables({ configuration: { ...configuration, variables_values_id: 'gone' } }, store(declare('foo')))))
      .toBe('Cannot read variable values "gone" of variables configuration "vars".');
  });

  it('an invalid values row', () => {
    expect(fails(() => resolveVariables({ configuration, variableValuesId: 'r' }, store(declare('foo'), { r: { values: [], invalid: 1 } }))))
      .toBe('Variable values configuration is invalid: Unrecognized option "invalid" under "configuration". Available option is "values".');
    expect(fails(() => resolveVariables({ configuration, variableValuesId: 'r' }, store(declare('foo'), { r: { values: [{ name: 'foo', value: '' }] } }))))
      .toBe('Variable values configuration is invalid: The path "configuration.values.0.value" cannot contain an empty value, but got "".');
  });

  it('a declared variable without a value', () => {
    expect(fails(() => resolveVariables({ configuration, variableValuesData: values({ other: 'x' }) }, store(declare('foo')))))
      .toBe('No value provided for variable "foo".');
  });

  it('a value with an empty name', () => {
    expect(fails(() => resolveVariables({ configuration, variableValuesData: { values: [{ name: '', value: 'x' }] } }, store(declare('foo')))))
      .toBe('Variable name cannot be empty.');
  });

  it('placeholders without values', () => {
    const c = { variables_id: 'vars', parameters: { a: '{{foo}} {{bar}} {{baz}} {{bar}}' } };
    expect(fails(() => resolveVariables({ configuration: c, variableValuesData: values({ foo: 'x' }) }, store(declare('foo')))))
      .toBe('Missing values for placeholders: bar, baz');
  });

  it('Vault placeholders are reported first, with or without variables_id', () => {
    const c = { variables_id: 'vars', parameters: { a: '{{ vault.foo }} {{foo}}' } };
    expect(fails(() => resolveVariables({ configuration: c, variableValuesData: values({ x: 'y' }) }, store(declare()))))
      .toBe('Missing values for placeholders: vault.foo, foo');
    expect(fails(() => resolveVariables({ configuration: { parameters: { a: '{{vault.token}}' } } }, store(undefined))))
      .toBe('Missing values for placeholders: vault.token');
  });

  it('a raw value that breaks the JSON', () => {
    const c = { variables_id: 'vars', parameters: { a: '{{{foo}}}' } };
    expect(fails(() => resolveVariables({ configuration: c, variableValuesData: values({ foo: 'special " \' { } characters' }) }, store(declare('foo')))))
      .toBe('Variable replacement resulted in invalid configuration, error: Syntax error');
    expect(fails(() => resolveVariables({ configuration: { ...c, parameters: { a: '{{& foo}}' } }, variableValuesData: values({ foo: 'line\nbreak' }) }, store(declare('foo')))))
      .toBe('Variable replacement resulted in invalid configuration, error: Control character error, possibly incorrectly encoded');
  });
});

describe('validation of the variables\' own configurations', () => {
  it('reads declarations and values', () => {
    expect(validateVariablesConfiguration(declare('a', 'b'))).toEqual([{ name: 'a', type: 'string' }, { name: 'b', type: 'string' }]);
    expect(validateVariableValues(values({ a: '1' }))).toEqual([{ name: 'a', value: '1' }]);
  });

  it('gives the config tree\'s messages', () => {
    expect(() => validateVariablesConfiguration({})).toThrow('Variable configuration is invalid: The child config "variables" under "configuration" must be configured.');
    expect(() => validateVariablesConfiguration({ variables: 'x' })).toThrow('Invalid type for path "configuration.variables". Expected "array", but got "string"');
    expect(() => validateVariablesConfiguration({ variables: [{ name: '', type: 'string' }] }))
      .toThrow('The path "configuration.variables.0.name" cannot contain an empty value, but got "".');
    expect(() => validateVariablesConfiguration({ variables: [{ name: 'a', type: 'string', x: 1 }] }))
      .toThrow('Unrecognized option "x" under "configuration.variables.0". Available options are "name", "type".');
    expect(() => validateVariablesConfiguration({ variables: [{ name: { a: 1 }, type: 'string' }] }))
      .toThrow('Invalid type for path "configuration.variables.0.name". Expected "scalar", but got "array".');
  });

  it('checks inline values as the Queue API does at job creation', () => {
    expect(validateInlineValues(values({ a: 'b' }))).toEqual([{ name: 'a', value: 'b' }]);
    expect(() => validateInlineValues({ values: [{ name: 'a' }] }))
      .toThrow('The child config "value" under "job.variableValuesData.values.0" must be configured.');
    expect(() => validateInlineValues({ values: [{ name: 'a', value: '' }] }))
      .toThrow('The path "job.variableValuesData.values.0.value" cannot contain an empty value, but got "".');
  });
});
