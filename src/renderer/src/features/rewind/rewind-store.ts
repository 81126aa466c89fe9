import { create } from 'zustand'

/**
 * Which undo or rewind the dialog is showing. Its own small store: the buttons that open it live in cards and
 * timeline rows that virtualized lists mount and unmount, so the dialog cannot belong to any of them.
 */
export interface RewindAsk {
  mode: 'undo' | 'rewind'
  callId: string
  /** What the user clicked, in words ("Write src/a.ts", "turn 3"). */
  label: string
}

interface RewindStore {
  ask: RewindAsk | null
  open(ask: RewindAsk): void
  close(): void
}

export const useRewindStore = create<RewindStore>((set) => ({
  ask: null,
  open: (ask) => set({ ask }),
  close: () => set({ ask: null }),
}))
