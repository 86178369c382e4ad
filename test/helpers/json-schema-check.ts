/**
 * Whether `value` follows `schema`, for the JSON schema subset the gateway enforces on GGUF (types, properties,
 * required, additionalProperties, items, min/maxItems, enum, const, oneOf/anyOf, min/maxLength, $defs/$ref).
 * Returns what is wrong, or an empty list. A test helper: it checks answers, it is not the product's code.
 */
export function schemaProblems(schema: Record<string, unknown>, value: unknown, path = "$", root: Record<string, unknown> = schema): string[] {
  if (typeof schema.$ref === "string") return schemaProblems((root.$defs as Record<string, Record<string, unknown>>)[schema.$ref.split("/").pop()!]!, value, path, root);
  const alternatives = (schema.oneOf ?? schema.anyOf) as Record<string, unknown>[] | undefined;
  if (alternatives) return alternatives.some((s) => schemaProblems(s, value, path, root).length === 0) ? [] : [`${path}: matches none of its alternatives`];
  if ("const" in schema) return value === schema.const ? [] : [`${path}: is not ${JSON.stringify(schema.const)}`];
  if (Array.isArray(schema.enum)) return schema.enum.includes(value) ? [] : [`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`];
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
  const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);
  const actual = typeOf(value);
  if (types.length && !types.includes(actual) && !(actual === "integer" && types.includes("number"))) return [`${path}: is ${actual}, expected ${types.join(" or ")}`];
  const problems: string[] = [];
  if (actual === "string") {
    const s = value as string;
    if (typeof schema.maxLength === "number" && s.length > schema.maxLength) problems.push(`${path}: longer than ${schema.maxLength}`);
    if (typeof schema.minLength === "number" && s.length < schema.minLength) problems.push(`${path}: shorter than ${schema.minLength}`);
  }
  if (actual === "array") {
    const a = value as unknown[];
    if (typeof schema.maxItems === "number" && a.length > schema.maxItems) problems.push(`${path}: more than ${schema.maxItems} items`);
    if (typeof schema.minItems === "number" && a.length < schema.minItems) problems.push(`${path}: fewer than ${schema.minItems} items`);
    if (schema.items) a.forEach((item, i) => problems.push(...schemaProblems(schema.items as Record<string, unknown>, item, `${path}[${i}]`, root)));
  }
  if (actual === "object") {
    const o = value as Record<string, unknown>;
    const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    for (const k of (schema.required ?? []) as string[]) if (!(k in o)) problems.push(`${path}: lacks ${k}`);
    for (const [k, v] of Object.entries(o)) {
      if (props[k]) problems.push(...schemaProblems(props[k]!, v, `${path}.${k}`, root));
      else if (schema.additionalProperties !== true) problems.push(`${path}: has ${k}, which the schema does not allow`);
    }
  }
  return problems;
}
