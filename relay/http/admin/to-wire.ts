/** `camelCase` → `camel_case`, as a type. */
type SnakeKey<S extends string> = S extends `${infer C}${infer Rest}` ? `${C extends Lowercase<C> ? C : `_${Lowercase<C>}`}${SnakeKey<Rest>}` : S;

/** A value as the admin API sends it: every object key in snake_case, deeply. */
export type Wire<T> = T extends readonly (infer U)[] ? Wire<U>[] : T extends object ? { [K in keyof T as K extends string ? SnakeKey<K> : K]: Wire<T[K]> } : T;

/**
 * The relay's values (camelCase) as the admin API speaks them (snake_case, like the gateway). Typed: a handler
 * returns `toWire(value)`, and the contract's answer type must accept it, so a field the contract names and
 * the relay does not have fails the build.
 */
export function toWire<T>(value: T): Wire<T> {
  return snakeCase(value) as Wire<T>;
}

/** `camelCase` → `camel_case`, one character at a time (no pattern, no callback: lists of thousands pass through here). */
function snakeKey(key: string): string {
  let out = "";
  let from = 0;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c >= 65 && c <= 90) {
      out += `${key.slice(from, i)}_${String.fromCharCode(c + 32)}`;
      from = i + 1;
    }
  }
  return from === 0 ? key : out + key.slice(from);
}

function snakeCase(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCase);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    const v = snakeCase((value as Record<string, unknown>)[k]);
    // A key named `__proto__` (in options a client gave) is defined, not assigned: it stays a key, never the prototype.
    if (k === "__proto__") Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[snakeKey(k)] = v;
  }
  return out;
}
