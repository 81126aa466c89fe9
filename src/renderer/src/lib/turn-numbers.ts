import type { TurnState } from '../../../shared/reducer'

/**
 * Turn numbers as the user sees them. The engine numbers every model request of a session (a request that
 * failed before any answer, an answer with only text), but the timeline and the transcript show a turn's header
 * only for a turn with calls (or one a rewind took back): those are the turns the user sees, and only they are
 * counted, so the first visible turn is "Turn 1" and the next one "Turn 2", however many attempts came between.
 * Every place that names a turn (headers, Rewind to here, rewinds' rows and marks, the rewind dialog, the
 * banner) asks here.
 */

const cache = new WeakMap<readonly TurnState[], Map<number, number>>()

/** Whether a turn has a header the user sees. */
export const turnIsShown = (turn: TurnState): boolean =>
  turn.callIds.length > 0 || turn.rewoundBy !== undefined

function numbers(turns: readonly TurnState[]): Map<number, number> {
  let map = cache.get(turns)
  if (!map) {
    map = new Map()
    let shown = 0
    for (const turn of turns) {
      // A turn with no header shares the number of the next one shown (a rewind "to before" it names that).
      if (turnIsShown(turn)) map.set(turn.turn, ++shown)
    }
    let next = shown + 1
    for (let i = turns.length - 1; i >= 0; i--) {
      const turn = turns[i] as TurnState
      const n = map.get(turn.turn)
      if (n !== undefined) next = n
      else map.set(turn.turn, next)
    }
    cache.set(turns, map)
  }
  return map
}

/** The number the user sees for the session's turn `turn` (the engine's number). */
export function shownTurn(turns: readonly TurnState[] | undefined, turn: number): number {
  return (turns && numbers(turns).get(turn)) ?? turn
}
