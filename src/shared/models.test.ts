import { describe, expect, it } from 'vitest'
import { thinkingSettingsFor } from './models'

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
