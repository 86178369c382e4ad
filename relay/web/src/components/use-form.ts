import { useCallback, useMemo, useState } from "preact/hooks";

type KeysOf<T, V> = { [K in keyof T]: T[K] extends V ? K : never }[keyof T];

/** A form's fields in one state, and the props that bind its inputs to them. */
export interface Form<T> {
  values: T;
  set<K extends keyof T>(name: K, value: T[K]): void;
  /** Binds a text input or a textarea to a text field. */
  text(name: KeysOf<T, string>): { value: string; onInput: (e: { currentTarget: { value: string } }) => void };
  /** Binds a select (or a radio's value) to a text field. */
  choice(name: KeysOf<T, string>): { value: string; onChange: (e: { currentTarget: { value: string } }) => void };
  /** Binds a checkbox to a yes/no field. */
  check(name: KeysOf<T, boolean>): { checked: boolean; onChange: (e: { currentTarget: { checked: boolean } }) => void };
}

/** Holds a form's fields, starting from `initial`: one state for the whole form rather than one per field. */
export function useForm<T extends Record<string, string | boolean>>(initial: T): Form<T> {
  const [values, setValues] = useState(initial);
  const set = useCallback(<K extends keyof T>(name: K, value: T[K]) => setValues((v) => ({ ...v, [name]: value })), []);
  return useMemo(
    () => ({
      values,
      set,
      text: (name) => ({ value: values[name] as string, onInput: (e) => set(name, e.currentTarget.value as T[typeof name]) }),
      choice: (name) => ({ value: values[name] as string, onChange: (e) => set(name, e.currentTarget.value as T[typeof name]) }),
      check: (name) => ({ checked: values[name] as boolean, onChange: (e) => set(name, e.currentTarget.checked as T[typeof name]) }),
    }),
    [values, set],
  );
}
