// The files and the scripted model's turns of the undo and rewind specs (ui-rewind, ui-rewind-history): turn 1
// reads f.txt and g.txt; turn 2 writes f.txt (three lines changed) and edits g.txt; turn 3 ends.

export const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`)
export const original = lines(30).join('\n') + '\n'
const changedLines = lines(30)
changedLines[1] = 'CHANGED 2'
changedLines[14] = 'CHANGED 15'
changedLines[28] = 'CHANGED 29'
export const changed = changedLines.join('\n') + '\n'

// The write is followed by a second call streamed slowly, so the hunk choices are made while it arrives.
export const farewell = `goodbye ${'and thank you for all the fish '.repeat(30)}`.trim()
export const scenario = {
  turns: [
    {
      blocks: [
        { tool: 'read_file', input: { path: 'f.txt' } },
        { tool: 'read_file', input: { path: 'g.txt' } },
      ],
      stop: 'tool_use',
    },
    {
      blocks: [
        { text: 'Changing three lines.' },
        { tool: 'write_file', input: { path: 'f.txt', content: changed } },
        { tool: 'edit_file', input: { path: 'g.txt', old_string: 'bye', new_string: farewell } },
      ],
      stop: 'tool_use',
      tokensPerSecond: 30,
    },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}
