import { describe, expect, it } from 'vitest'
import { compactionThreshold, DEFAULT_CONTEXT_WINDOW, modelContext, thinkingSettingsFor } from './models'

describe('thinkingSettingsFor', () => {
  it('offers adaptive and between_tools (never disabled) on models that think by default', () => {
    expect(thinkingSettingsFor('claude-sonnet-5-5')).toEqual(['adaptive', 'between_tools'])
    expect(thinkingSettingsFor('claude-opus-5-5')).toEqual(['adaptive', 'between_tools'])
  })

  it('offers nothing for other models, so no thinking field is sent to them', () => {
    expect(thinkingSettingsFor('claude-haiku-4-5')).toBeNull()
    expect(thinkingSettingsFor('claude-sonnet-5-50')).toBeNull()
    expect(thinkingSettingsFor('lanes-demo')).toBeNull()
  })
})

describe('modelContext', () => {
  it('gives each model its documented window: 1M where the Models overview says so, 200k for the others', () => {
    for (const model of [
      'claude-opus-4-6',
      'claude-opus-4-7',
      'claude-opus-4-8',
      'claude-opus-5',
      'claude-opus-5-5',
      'claude-sonnet-4-6',
      'claude-sonnet-5',
      'claude-sonnet-5-5',
      'claude-haiku-5-5',
      'claude-fable-5',
      'claude-fable-5-1',
      'claude-mythos-preview',
      'claude-mythos-5',
    ])
      expect(modelContext(model).window, model).toBe(1_000_000)
    for (const model of [
      'claude-sonnet-4-5',
      'claude-sonnet-4-5-20250929',
      'claude-haiku-4-5',
      'claude-haiku-4-5-20251001',
      'claude-opus-4-5-20251101',
      'claude-opus-4-1',
      'claude-sonnet-5-50',
      'claude-opus-4-60',
      'lanes-demo',
      'my-gateway/claude-opus-4-7',
    ])
      expect(modelContext(model).window, model).toBe(DEFAULT_CONTEXT_WINDOW)
    expect(DEFAULT_CONTEXT_WINDOW).toBe(200_000)
    // A dated id reads like its alias.
    expect(modelContext('claude-opus-4-6-20260205').window).toBe(1_000_000)
  })

  it('sets the compaction threshold from that window, and a lower setting wins', () => {
    expect(compactionThreshold(modelContext('claude-sonnet-4-6').window)).toBe(850_000)
    expect(compactionThreshold(modelContext('claude-haiku-4-5').window)).toBe(160_000)
    expect(compactionThreshold(modelContext('claude-sonnet-4-6').window, 300_000)).toBe(300_000)
  })
})
