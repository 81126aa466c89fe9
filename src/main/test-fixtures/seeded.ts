/**
 * A deterministic stream of pseudo-random integers in [0, 2^31) (a linear congruential generator), so a fuzz
 * test draws the same inputs on every run and a failure can be replayed.
 */
export function seededInts(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31
    return x
  }
}

/** 1 to `most` of `pieces`, drawn with `next`: the fragments a fuzz test glues into one input. */
export function drawPieces(next: () => number, pieces: readonly string[], most: number): string[] {
  const count = 1 + (next() % most)
  return Array.from({ length: count }, () => pieces[next() % pieces.length] ?? '')
}
