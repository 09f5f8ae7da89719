/**
 * A JSON Schema validator for the subset src/http/openapi.ts uses (type, enum, const,
 * properties, required, additionalProperties, items, $ref, allOf, oneOf, minimum,
 * maximum, minItems, maxItems, minLength, maxLength, pattern; description is ignored). A
 * keyword outside the subset throws: the description cannot use one that nothing checks.
 * (Ajv 8 would do this; it is not a dependency of this project.)
 */

type Json = Record<string, unknown>;

const known = new Set(['type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', '$ref', 'allOf', 'oneOf',
  'minimum', 'maximum', 'minItems', 'maxItems', 'minLength', 'maxLength', 'pattern', 'description']);

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(v: unknown, type: unknown): boolean {
  const types = Array.isArray(type) ? (type as string[]) : [type as string];
  const t = typeOf(v);
  return types.some((x) => x === t || (x === 'number' && t === 'integer'));
}

/** Validates `value` against `schema`; `root` resolves `#/...` references. Returns the problems, empty when valid. */
export function validate(value: unknown, schema: Json, root: Json, at = '$'): string[] {
  for (const key of Object.keys(schema)) if (!known.has(key)) throw new Error(`schema keyword ${key} at ${at} is outside the validated subset`);
  const out: string[] = [];
  if (typeof schema['$ref'] === 'string') out.push(...validate(value, resolve(root, schema['$ref']), root, at));
  if (schema['type'] !== undefined && !typeMatches(value, schema['type'])) return [...out, `${at}: ${JSON.stringify(value)?.slice(0, 80)} is not of type ${JSON.stringify(schema['type'])}`];
  if (Array.isArray(schema['enum']) && !schema['enum'].some((e) => e === value)) out.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema['enum'])}`);
  if ('const' in schema && schema['const'] !== value) out.push(`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(schema['const'])}`);
  for (const sub of (schema['allOf'] as Json[] | undefined) ?? []) out.push(...validate(value, sub, root, at));
  if (Array.isArray(schema['oneOf'])) {
    const passing = (schema['oneOf'] as Json[]).filter((sub) => validate(value, sub, root, at).length === 0).length;
    if (passing !== 1) out.push(`${at}: matches ${passing} of oneOf, not exactly 1`);
  }
  if (typeof value === 'number') {
    if (typeof schema['minimum'] === 'number' && value < schema['minimum']) out.push(`${at}: ${value} < minimum ${schema['minimum']}`);
    if (typeof schema['maximum'] === 'number' && value > schema['maximum']) out.push(`${at}: ${value} > maximum ${schema['maximum']}`);
  }
  if (typeof value === 'string') {
    if (typeof schema['minLength'] === 'number' && value.length < schema['minLength']) out.push(`${at}: shorter than ${schema['minLength']}`);
    if (typeof schema['maxLength'] === 'number' && value.length > schema['maxLength']) out.push(`${at}: longer than ${schema['maxLength']}`);
    if (typeof schema['pattern'] === 'string' && !new RegExp(schema['pattern'], 'u').test(value)) out.push(`${at}: ${JSON.stringify(value)} does not match ${schema['pattern']}`);
  }
  if (Array.isArray(value)) out.push(...validateArray(value, schema, root, at));
  if (typeOf(value) === 'object') out.push(...validateObject(value as Json, schema, root, at));
  return out;
}

function validateArray(value: unknown[], schema: Json, root: Json, at: string): string[] {
  const out: string[] = [];
  if (typeof schema['minItems'] === 'number' && value.length < schema['minItems']) out.push(`${at}: fewer than ${schema['minItems']} items`);
  if (typeof schema['maxItems'] === 'number' && value.length > schema['maxItems']) out.push(`${at}: more than ${schema['maxItems']} items`);
  const items = schema['items'] as Json | undefined;
  if (items !== undefined) value.forEach((v, i) => out.push(...validate(v, items, root, `${at}[${i}]`)));
  return out;
}

function validateObject(value: Json, schema: Json, root: Json, at: string): string[] {
  const out: string[] = [];
  const props = (schema['properties'] as Record<string, Json> | undefined) ?? {};
  for (const key of (schema['required'] as string[] | undefined) ?? []) if (!(key in value)) out.push(`${at}: missing ${key}`);
  for (const [key, v] of Object.entries(value)) {
    const sub = props[key];
    if (sub !== undefined) out.push(...validate(v, sub, root, `${at}.${key}`));
    else if (schema['additionalProperties'] === false) out.push(`${at}: ${key} is not in the description`);
    else if (typeof schema['additionalProperties'] === 'object') out.push(...validate(v, schema['additionalProperties'] as Json, root, `${at}.${key}`));
  }
  return out;
}

/** The schema a `#/a/b/c` reference names. */
export function resolve(root: Json, ref: string): Json {
  if (!ref.startsWith('#/')) throw new Error(`only local references are supported: ${ref}`);
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) node = (node as Json | undefined)?.[part];
  if (typeof node !== 'object' || node === null) throw new Error(`unresolved reference ${ref}`);
  return node as Json;
}
