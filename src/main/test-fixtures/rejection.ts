import { expect } from 'vitest'

/** The error `promise` rejects with, checked to be an `ErrorClass`; the test fails when it resolves. */
export async function rejectionOf<E extends Error>(
  promise: Promise<unknown>,
  ErrorClass: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await promise
  } catch (e) {
    expect(e).toBeInstanceOf(ErrorClass)
    return e as E
  }
  throw new Error(`expected a rejection with a ${ErrorClass.name}`)
}
