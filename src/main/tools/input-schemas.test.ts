import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { BashInput } from './bash/bash'
import { EditFileInput } from './edit-file'
import { GlobInput } from './glob'
import { GrepInput } from './grep'
import { toolInputSchemas } from './index'
import { ReadFileInput } from './read-file'
import { WriteFileInput } from './write-file'

type JsonSchema = {
  type?: string
  properties?: Record<string, { type?: string; description?: string }>
  required?: string[]
  additionalProperties?: boolean
  description?: string
}

const expectedFields: Record<keyof typeof toolInputSchemas, { required: string[]; optional: string[] }> = {
  read_file: { required: ['path'], optional: ['offset', 'limit'] },
  write_file: { required: ['path', 'content'], optional: ['encoding'] },
  edit_file: { required: ['path', 'old_string', 'new_string'], optional: ['replace_all'] },
  grep: { required: ['pattern'], optional: ['path', 'include', 'case_insensitive'] },
  glob: { required: ['pattern'], optional: ['path'] },
  bash: { required: ['command'], optional: ['timeout', 'description'] },
}

describe('toolInputSchemas', () => {
  it('holds exactly the six tools', () => {
    expect(Object.keys(toolInputSchemas).sort()).toEqual([
      'bash',
      'edit_file',
      'glob',
      'grep',
      'read_file',
      'write_file',
    ])
  })

  it.each(Object.entries(expectedFields))(
    'gives the model a clean, closed JSON Schema for %s',
    (name, fields) => {
      const json = z.toJSONSchema(toolInputSchemas[name as keyof typeof toolInputSchemas], {
        io: 'input',
      }) as JsonSchema
      expect(json.type).toBe('object')
      expect(json.additionalProperties).toBe(false)
      expect(json.description).toBeTruthy()
      expect((json.required ?? []).sort()).toEqual([...fields.required].sort())
      expect(Object.keys(json.properties ?? {}).sort()).toEqual(
        [...fields.required, ...fields.optional].sort(),
      )
      for (const [field, property] of Object.entries(json.properties ?? {})) {
        expect(property.description, `${name}.${field} needs a description`).toBeTruthy()
        expect(field).toMatch(/^[a-z]+(?:_[a-z]+)*$/)
      }
    },
  )
})

describe('schemas: strictness', () => {
  it('rejects unknown fields and names them', () => {
    const result = ReadFileInput.safeParse({ path: 'a.ts', file_path: 'b.ts' })
    expect(result.success).toBe(false)
    expect(JSON.stringify(result.error?.issues)).toContain('file_path')
  })

  it('never coerces types', () => {
    expect(ReadFileInput.safeParse({ path: 'a.ts', offset: '10' }).success).toBe(false)
    expect(ReadFileInput.safeParse({ path: 'a.ts', limit: 2.5 }).success).toBe(false)
    expect(
      EditFileInput.safeParse({ path: 'a', old_string: 'x', new_string: 'y', replace_all: 'true' }).success,
    ).toBe(false)
    expect(GrepInput.safeParse({ pattern: 'x', case_insensitive: 1 }).success).toBe(false)
    expect(WriteFileInput.safeParse({ path: 'a', content: 42 }).success).toBe(false)
    expect(BashInput.safeParse({ command: ['ls'] }).success).toBe(false)
  })

  it('enforces the documented bounds', () => {
    expect(ReadFileInput.safeParse({ path: 'a.ts', offset: 0 }).success).toBe(false)
    expect(ReadFileInput.safeParse({ path: 'a.ts', offset: 1, limit: 1 }).success).toBe(true)
    expect(ReadFileInput.safeParse({ path: 'a.ts', offset: 2 ** 60 }).success).toBe(false)
    expect(BashInput.safeParse({ command: 'ls', timeout: 0 }).success).toBe(false)
    expect(BashInput.safeParse({ command: 'ls', timeout: 601 }).success).toBe(false)
    expect(BashInput.safeParse({ command: 'ls', timeout: 1 }).success).toBe(true)
    expect(BashInput.safeParse({ command: 'ls', timeout: 600 }).success).toBe(true)
    expect(EditFileInput.safeParse({ path: 'a', old_string: '', new_string: 'y' }).success).toBe(false)
    expect(EditFileInput.safeParse({ path: 'a', old_string: 'x', new_string: '' }).success).toBe(true)
    expect(WriteFileInput.safeParse({ path: '', content: 'x' }).success).toBe(false)
    expect(WriteFileInput.safeParse({ path: 'a', content: '' }).success).toBe(true)
    expect(GlobInput.safeParse({ pattern: '' }).success).toBe(false)
    expect(BashInput.safeParse({ command: '' }).success).toBe(false)
  })

  it('rejects control and invisible characters in paths, patterns and commands, but not in file content', () => {
    for (const bad of ['src\n/etc', 'a\u0000b', 'a\tb', 'a\u202eb', 'a\u200bb', 'a\u0085b', 'a\ud800'])
      expect(ReadFileInput.safeParse({ path: bad }).success, JSON.stringify(bad)).toBe(false)
    expect(GlobInput.safeParse({ pattern: '**/*\n' }).success).toBe(false)
    expect(GrepInput.safeParse({ pattern: 'x', include: '*.ts\u0000' }).success).toBe(false)
    expect(GrepInput.safeParse({ pattern: 'a\u0000' }).success).toBe(false)
    expect(GrepInput.safeParse({ pattern: 'foo\nbar' }).success).toBe(false)
    expect(GrepInput.safeParse({ pattern: 'foo\\nbar\\t\\x{202E}' }).success).toBe(true)
    expect(BashInput.safeParse({ command: 'ls\nrm -rf /' }).success).toBe(false)
    expect(BashInput.safeParse({ command: 'ls', description: 'list\u202e' }).success).toBe(false)
    expect(ReadFileInput.safeParse({ path: 'emoji-\u{1F468}\u200d\u{1F469}.txt' }).success).toBe(true)
    expect(WriteFileInput.safeParse({ path: 'a', content: 'tab\there\u0000\n' }).success).toBe(true)
    expect(EditFileInput.safeParse({ path: 'a', old_string: '\t\r\n', new_string: '\u202e' }).success).toBe(
      true,
    )
  })
})
