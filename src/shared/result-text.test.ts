import { describe, expect, it } from 'vitest'
import { ERROR_HINT, executionTimeLine, resultForPeople } from './result-text'

describe('resultForPeople', () => {
  it('takes off the hint and the execution time the engine adds for the model', () => {
    const output = ['ls: cannot access x: No such file', executionTimeLine(12.4), ERROR_HINT].join('\n\n')
    expect(resultForPeople(output)).toBe('ls: cannot access x: No such file')
  })

  it('keeps text that only looks like a hint inside the output', () => {
    const output = `printed [HINT: x]\n\n${ERROR_HINT} and more`
    expect(resultForPeople(output)).toBe(output)
  })
})
