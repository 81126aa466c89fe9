import { describe, expect, it } from 'vitest'
import type { z } from 'zod'
import { eventChannels, requestChannels, type EventChannel, type RequestChannel } from './ipc'

const LANES = { workspace: 'read-only', network: false, timeoutSec: 60 }

const SID = '2026-11-30T19-40-12-123Z-a1b2c3'

// Typed as a record over every channel, so a channel added to the contract without samples fails typecheck.
const requestSamples: Record<RequestChannel, { valid: unknown[]; invalid: unknown[] }> = {
  'app:info': { valid: [undefined], invalid: [null, {}, 'x', 1, [], { path: '/tmp' }] },
  'workspace:current': { valid: [undefined], invalid: [null, {}, 'x', 0, []] },
  'workspace:open': {
    valid: [undefined, {}, { path: '/tmp' }, { path: 'relative/dir' }],
    invalid: [
      null,
      'x',
      42,
      [],
      { path: 42 },
      { path: '' },
      { path: null },
      { path: ['a'] },
      { path: '/tmp', extra: true },
      { path: 'x'.repeat(5000) },
    ],
  },
  'folder:list': {
    valid: [undefined, {}, { path: '/home' }],
    invalid: [
      null,
      'x',
      { path: '' },
      { path: 1 },
      { path: '/tmp', hidden: true },
      { path: 'x'.repeat(5000) },
    ],
  },
  'session:list': { valid: [undefined], invalid: [null, {}, 'x'] },
  'session:start': {
    valid: [{ task: 'fix the tests' }, { task: 'again', sessionId: SID }],
    invalid: [
      undefined,
      {},
      { task: '' },
      { task: '   ' },
      { task: 1 },
      { task: 'x', sessionId: '../etc' },
      { task: 'x', extra: 1 },
    ],
  },
  'session:load': {
    valid: [{ sessionId: SID }],
    invalid: [
      undefined,
      {},
      { sessionId: '' },
      { sessionId: '../../x' },
      { sessionId: 'a/b' },
      { sessionId: SID, x: 1 },
    ],
  },
  'session:continue': {
    valid: [{ sessionId: SID }],
    invalid: [undefined, { sessionId: '.hidden' }, { sessionId: 7 }],
  },
  'session:stop': { valid: [{ sessionId: SID }], invalid: [undefined, 'x', { sessionId: null }] },
  'approval:diff': {
    valid: [{ sessionId: SID, callId: 'toolu_1', from: 0, count: 500 }],
    invalid: [
      { sessionId: SID, callId: 'toolu_1', from: -1, count: 500 },
      { sessionId: SID, callId: 'toolu_1', from: 0, count: 0 },
      { sessionId: SID, callId: 'toolu_1', from: 0, count: 100_000 },
      { sessionId: SID, callId: '', from: 0, count: 1 },
    ],
  },
  'held:files': {
    valid: [
      { sessionId: SID, callId: 'toolu_1', folder: '', offset: 0, limit: 200 },
      { sessionId: SID, callId: 'toolu_1', folder: 'src/a', offset: 400, limit: 500 },
    ],
    invalid: [
      { sessionId: SID, callId: 'toolu_1', folder: '', offset: 0, limit: 501 },
      { sessionId: SID, callId: 'toolu_1', folder: '', offset: -1, limit: 1 },
      { sessionId: SID, callId: 'toolu_1', offset: 0, limit: 1 },
      { sessionId: SID, callId: 'toolu_1', folder: 'x'.repeat(5000), offset: 0, limit: 1 },
    ],
  },
  'held:diff': {
    valid: [{ sessionId: SID, callId: 'toolu_1', relPath: '.env' }],
    invalid: [
      { sessionId: SID, callId: 'toolu_1', relPath: '' },
      { sessionId: SID, callId: 'toolu_1' },
      { sessionId: SID, callId: 'toolu_1', relPath: '.env', extra: 1 },
    ],
  },
  'session:revoke-rule': {
    valid: [{ sessionId: SID, ruleId: 'rule-1' }],
    invalid: [
      undefined,
      { sessionId: SID },
      { sessionId: SID, ruleId: '' },
      { sessionId: '../x', ruleId: 'r' },
    ],
  },
  'approval:reply': {
    valid: [
      { sessionId: SID, decisions: [{ callId: 'toolu_1', decision: 'approved' }] },
      {
        sessionId: SID,
        decisions: [
          { callId: 'toolu_1', decision: 'rejected', note: 'use tabs' },
          { callId: 'toolu_2', decision: 'approved', always: true, forSession: true },
        ],
      },
      {
        sessionId: SID,
        decisions: [
          {
            callId: 'toolu_3',
            decision: 'approved',
            hunks: [
              { index: 0, decision: 'rejected', note: 'keep it' },
              { index: 1, decision: 'edited', text: 'mine\n' },
            ],
          },
        ],
      },
    ],
    invalid: [
      undefined,
      { sessionId: SID, decisions: [] },
      { sessionId: SID, decisions: [{ callId: 'toolu_1', decision: 'maybe' }] },
      { sessionId: SID, decisions: [{ callId: '', decision: 'approved' }] },
      { sessionId: SID, decisions: [{ callId: 'toolu_1', decision: 'approved', sudo: true }] },
      {
        sessionId: SID,
        decisions: [{ callId: 't', decision: 'approved', hunks: [{ index: -1, decision: 'rejected' }] }],
      },
      {
        sessionId: SID,
        decisions: [{ callId: 't', decision: 'approved', hunks: [{ index: 0, decision: 'maybe' }] }],
      },
    ],
  },
  'rewind:plan': {
    valid: [
      { sessionId: SID, mode: 'undo', callId: 'toolu_1' },
      { sessionId: SID, mode: 'rewind', callId: 'toolu_1', conversation: true },
    ],
    invalid: [
      undefined,
      { sessionId: SID, mode: 'redo', callId: 'toolu_1' },
      { sessionId: SID, mode: 'undo', callId: '' },
      { sessionId: '../x', mode: 'undo', callId: 'toolu_1' },
      { sessionId: SID, mode: 'undo', callId: 'toolu_1', extra: 1 },
    ],
  },
  'rewind:apply': {
    valid: [
      { sessionId: SID, mode: 'rewind', callId: 'toolu_1', rewindConflicts: ['a.txt'] },
      { sessionId: SID, mode: 'undo', callId: 'toolu_1' },
    ],
    invalid: [{ sessionId: SID, mode: 'undo', callId: 'toolu_1', rewindConflicts: 'a.txt' }],
  },
  'settings:get': { valid: [undefined], invalid: [null, {}] },
  'settings:set': {
    valid: [
      {},
      { model: 'claude-x' },
      { apiKey: null },
      { apiKey: 'sk-ant-123' },
      { scheduler: 'batch', siblingSkip: false, bashTimeoutSec: 30 },
      { baseUrl: 'http://127.0.0.1:9999' },
      { thinking: 'between_tools' },
    ],
    invalid: [
      undefined,
      { scheduler: 'random' },
      { bashTimeoutSec: 0 },
      { bashTimeoutSec: 601 },
      { apiKey: '' },
      { baseUrl: 'not a url' },
      { model: '' },
      { theme: 'dark' },
      // The API refuses it on models that think by default; between_tools is the lowest setting.
      { thinking: 'disabled' },
    ],
  },
  'mcp:list': { valid: [undefined], invalid: [{}, 'x'] },
  'mcp:trust': {
    valid: [{ trustKey: 'a'.repeat(64) }],
    invalid: [
      undefined,
      {},
      { trustKey: 'evil' },
      { trustKey: 'A'.repeat(64) },
      { trustKey: 'a'.repeat(64), x: 1 },
    ],
  },
  'mcp:save-server': {
    valid: [
      {
        name: 'everything',
        server: { kind: 'stdio', command: 'npx', args: ['-y', 'x'], env: { A: 'b', K: { keep: true } } },
        lanes: { workspace: 'read-write', network: true, timeoutSec: 60 },
      },
      {
        name: 'remote',
        previousName: 'old',
        server: { kind: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' } },
        lanes: { workspace: 'none', network: false, timeoutSec: 5 },
      },
    ],
    invalid: [
      undefined,
      { name: '', server: { kind: 'stdio', command: 'x', args: [], env: {} }, lanes: LANES },
      { name: 'a', server: { kind: 'stdio', command: '', args: [], env: {} }, lanes: LANES },
      {
        name: 'a',
        server: { kind: 'stdio', command: 'x', args: [], env: { K: { keep: false } } },
        lanes: LANES,
      },
      { name: 'a', server: { kind: 'ftp', url: 'x' }, lanes: LANES },
      {
        name: 'a',
        server: { kind: 'stdio', command: 'x', args: [], env: {} },
        lanes: { ...LANES, timeoutSec: 0 },
      },
      { name: 'a', server: { kind: 'stdio', command: 'x', args: [], env: {} } },
    ],
  },
  'mcp:remove-server': {
    valid: [{ name: 'x' }],
    invalid: [undefined, {}, { name: '' }, { name: 'x', y: 1 }],
  },
}

const eventSamples: Record<EventChannel, { valid: unknown[]; invalid: unknown[] }> = {
  'session:events': {
    valid: [
      { sessionId: SID, events: [] },
      { sessionId: SID, events: [{ type: 'tool.started', at: 1, seq: 3, callId: 'toolu_1' }] },
    ],
    invalid: [
      { sessionId: SID },
      { sessionId: SID, events: [{ type: 'tool.exploded', at: 1, seq: 1 }] },
      null,
    ],
  },
  'session:list-changed': { valid: [{}], invalid: [null, 'x'] },
  'workspace:changed': {
    valid: [{ path: '/tmp/x', name: 'x' }],
    invalid: [null, undefined, {}, { path: '/tmp/x' }, { path: 1, name: 'x' }, 'x'],
  },
}

describe('the IPC contract', () => {
  for (const channel of Object.keys(requestChannels) as RequestChannel[]) {
    describe(channel, () => {
      const schema: z.ZodType = requestChannels[channel].input
      it('accepts well-formed input', () => {
        for (const input of requestSamples[channel].valid) expect(schema.safeParse(input).success).toBe(true)
      })
      it('rejects bad payloads', () => {
        for (const input of requestSamples[channel].invalid) {
          expect(schema.safeParse(input).success, `${channel} accepted ${JSON.stringify(input)}`).toBe(false)
        }
      })
      it('rejects unknown fields on object inputs', () => {
        expect(schema.safeParse({ __proto__: { polluted: true }, unknownField: 1 }).success).toBe(false)
      })
    })
  }

  for (const channel of Object.keys(eventChannels) as EventChannel[]) {
    it(`event ${channel} validates its payload`, () => {
      const schema: z.ZodType = eventChannels[channel]
      for (const payload of eventSamples[channel].valid) expect(schema.safeParse(payload).success).toBe(true)
      for (const payload of eventSamples[channel].invalid)
        expect(schema.safeParse(payload).success).toBe(false)
    })
  }

  it('names channels resource:verb', () => {
    for (const channel of [...Object.keys(requestChannels), ...Object.keys(eventChannels)]) {
      expect(channel).toMatch(/^[a-z]+(-[a-z]+)*:[a-z]+(-[a-z]+)*$/)
    }
  })
})
