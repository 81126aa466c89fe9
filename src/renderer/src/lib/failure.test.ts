import { describe, expect, it } from 'vitest'
import { ERROR_HINT, executionTimeLine } from '../../../shared/result-text'
import type { ToolCallState } from '../../../shared/tool-call'
import { failureLine, plainRunError } from './failure'

const failed = (output: string): ToolCallState =>
  ({ callId: 'c', status: 'error', isError: true, output }) as ToolCallState

describe('failureLine', () => {
  it('gives the line that says what went wrong, never the hint', () => {
    const output = [
      'node:internal/modules/cjs/loader:1210\n  throw err;\n  ^\n\nError: Cannot find module check-build.js',
      executionTimeLine(40),
      ERROR_HINT,
    ].join('\n\n')
    expect(failureLine(failed(output))).toBe('Error: Cannot find module check-build.js')
  })

  it('falls back to the first line, and says nothing for calls that did not fail', () => {
    expect(failureLine(failed(`old_string occurs 2 times in a.ts\n\n${ERROR_HINT}`))).toBe(
      'old_string occurs 2 times in a.ts',
    )
    expect(failureLine({ ...failed('x'), status: 'ok' } as ToolCallState)).toBeUndefined()
  })
})

describe('plainRunError', () => {
  it('leaves out the API request id', () => {
    expect(plainRunError('The model API is overloaded right now. (request id req_011CX)')).toBe(
      'The model API is overloaded right now.',
    )
  })
})
