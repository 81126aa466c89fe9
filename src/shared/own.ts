/**
 * The value `record` holds under `key` itself. A plain object also answers every name it inherits
 * (`constructor`, `toString`, `__proto__`, ...), so a lookup keyed by a file, program, tool or header name
 * must never read it with `record[key]` or test it with `key in record`: a folder named `constructor` would
 * find `Object` there.
 */
export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined
}

/**
 * Adds or replaces `record`'s own entry `key`. Assigning `record['__proto__']` would replace the record's
 * prototype instead of adding an entry.
 */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  // Only `__proto__` is an accessor on Object.prototype; every other name assigns an own data property. Plain
  // assignment keeps the record a fast object, where defineProperty turned it into a slow dictionary that
  // every later copy of it (`{ ...calls }` in the reducer) paid for.
  if (key === '__proto__')
    Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true })
  else record[key] = value
}
