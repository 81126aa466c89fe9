import { describe, expect, it } from 'vitest'
import type { TurnState } from '../../../shared/reducer'
import { shownTurn } from './turn-numbers'

const turn = (n: number, calls: number, rewoundBy?: string): TurnState =>
  ({
    turn: n,
    startedAt: n,
    blocks: [],
    callIds: Array.from({ length: calls }, (_, i) => `c${n}-${i}`),
    calls: {},
    ...(rewoundBy ? { rewoundBy } : {}),
  }) as unknown as TurnState

describe('shownTurn', () => {
  it('counts only the turns the user sees: two failed attempts before the first call do not make it "Turn 3"', () => {
    // 1 and 2: requests that failed; 3: calls; 4: the answer's text; 5 (a follow-up run): calls.
    const turns = [turn(1, 0), turn(2, 0), turn(3, 2), turn(4, 0), turn(5, 1)]
    expect(shownTurn(turns, 3)).toBe(1)
    expect(shownTurn(turns, 5)).toBe(2)
    // A turn without a header takes the number of the next one shown.
    expect(shownTurn(turns, 4)).toBe(2)
    expect(shownTurn(turns, 1)).toBe(1)
  })

  it('counts a rewound turn, which the transcript shows, and falls back to the engine’s number without turns', () => {
    const turns = [turn(1, 1), turn(2, 0, 'rw1'), turn(3, 1)]
    expect([1, 2, 3].map((n) => shownTurn(turns, n))).toEqual([1, 2, 3])
    expect(shownTurn(undefined, 7)).toBe(7)
  })
})
