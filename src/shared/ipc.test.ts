import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { eventChannels, requestChannels, type EventChannel, type RequestChannel } from './ipc'

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
}

const eventSamples: Record<EventChannel, { valid: unknown[]; invalid: unknown[] }> = {
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
