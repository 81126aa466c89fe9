import { describe, expect, it } from 'vitest'
import { ERROR_HINT, executionTimeLine } from '../../../shared/result-text'
import type { ToolCallState } from '../../../shared/tool-call'
import { failureLine, plainFailure, plainRunError } from './failure'

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

describe('plainFailure', () => {
  const refused = (name: string, input: unknown, output: string): ToolCallState =>
    ({
      callId: 'c',
      name,
      input,
      status: 'error',
      isError: true,
      output: `${output}\n\n${ERROR_HINT}`,
    }) as ToolCallState

  it('says in plain words that Lanes did not run a command list, that the agent handles it, and keeps the model’s text', () => {
    const text = 'command lists (`&&`, `||`) are not allowed; run one command per call and check its result'
    const plain = plainFailure(refused('bash', { command: 'npm test && npm run lint' }, text))!
    expect(plain.what).toContain('did not run “npm test && npm run lint”')
    expect(plain.what).not.toContain('not allowed')
    expect(plain.next).toContain('will run the commands one by one')
    expect(plain.handled).toBe(true)
    expect(plain.label).toBe('Not run')
    expect(plain.forModel).toBe(text)
  })

  it('explains a write refused for not reading the file first', () => {
    const plain = plainFailure(
      refused(
        'write_file',
        { path: 'src/a.ts', content: 'x' },
        'src/a.ts already exists and has not been read in this session. Read it first with read_file, then retry, so its current content is not lost by mistake.',
      ),
    )!
    expect(plain.what).toBe(
      'The agent tried to change src/a.ts without reading it first, so Lanes stopped it (this keeps your version of the file from being lost).',
    )
    expect(plain.what).not.toMatch(/read_file/)
    expect(plain.next).toContain('will read the file and try again')
  })

  it('says a call too large to review was not run, in words without the tool’s name', () => {
    const plain = plainFailure(
      refused(
        'write_file',
        null,
        "Not run: this call's input is 1.4 MB, more than one call may carry (1 MiB), which is too large for the user to review. Send smaller calls.",
      ),
    )!
    expect(plain.what).toBe(
      'The agent sent a change in one piece (1.4 MB), too large for you to review, so Lanes did not run it.',
    )
    expect(plain.what).not.toMatch(/write_file|Invalid arguments/)
    expect(plain.next).toContain('smaller parts')
    expect(plain.label).toBe('Not run')
  })

  it('says a binary file cannot be read as text, as something the agent handles', () => {
    const plain = plainFailure(
      refused(
        'read_file',
        { path: 'assets/logo.png' },
        'assets/logo.png is a binary file (it contains NUL bytes), so it cannot be shown as text. It is 4.2 KB (PNG image).',
      ),
    )!
    expect(plain.what).toBe(
      'assets/logo.png is not a text file (an image or other binary data), so the agent cannot read it as text.',
    )
    expect(plain.handled).toBe(true)
  })

  it('tells the user what they can do when the sandbox cannot start, and does not call it handled', () => {
    const plain = plainFailure(
      refused(
        'bash',
        { command: 'ls' },
        'Command not run: the sandbox could not start (bwrap: no permissions).',
      ),
    )!
    expect(plain.handled).toBe(false)
    expect(plain.next).toContain('Settings')
  })

  it('keeps a real failure’s own words (a command that ran and failed) and says the agent sees it', () => {
    const ran = {
      ...refused('bash', { command: 'npm test' }, 'Error: Cannot find module check-build.js'),
      startedAt: 1,
    } as ToolCallState
    const plain = plainFailure(ran)!
    expect(plain.what).toBe('Error: Cannot find module check-build.js')
    expect(plain.handled).toBe(false)
    expect(plain.label).toBeUndefined()
    expect(plainFailure({ ...ran, status: 'ok' } as ToolCallState)).toBeUndefined()
  })
})
