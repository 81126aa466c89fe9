import { create } from 'zustand'
import type { AppInfo, WorkspaceInfo } from '../../../shared/ipc'

/** One store in slices; actions sit next to the state they change (zustand docs). */
interface WorkspaceSlice {
  workspace: WorkspaceInfo | null
  workspaceError: string | null
  opening: boolean
  setWorkspace(workspace: WorkspaceInfo | null): void
  openWorkspace(path?: string): Promise<void>
}

interface AppSlice {
  info: AppInfo | null
  loadError: string | null
  load(): Promise<void>
}

export type AppState = WorkspaceSlice & AppSlice

export const useAppStore = create<AppState>()((set) => ({
  info: null,
  loadError: null,
  async load() {
    const [info, current] = await Promise.all([
      window.api.invoke('app:info'),
      window.api.invoke('workspace:current'),
    ])
    if (!info.ok) return set({ loadError: info.error })
    set({ info: info.value, workspace: current.ok ? current.value : null })
  },

  workspace: null,
  workspaceError: null,
  opening: false,
  setWorkspace: (workspace) => set({ workspace, workspaceError: null }),
  async openWorkspace(path) {
    set({ opening: true, workspaceError: null })
    const result = await window.api.invoke('workspace:open', path === undefined ? undefined : { path })
    if (result.ok) set({ workspace: result.value, opening: false })
    else set({ opening: false, workspaceError: result.code === 'cancelled' ? null : result.error })
  },
}))
