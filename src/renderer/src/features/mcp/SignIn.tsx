import { useEffect, useState } from 'react'
import type { McpUserServerView } from '../../../../shared/ipc'
import { useAppStore } from '../../store/app-store'

/**
 * A remote server's OAuth sign-in in Settings: "Sign in" opens the server's sign-in page in the system browser
 * (the desktop app) or shows its address to open (browser mode); "Signed in as … / Sign out" once main has its
 * tokens. Main does the whole flow (mcp/oauth.ts) and says how it ended with `mcp:auth-changed`.
 */
export function SignIn({
  name,
  auth,
  waiting,
}: {
  name: string
  auth: NonNullable<McpUserServerView['auth']>
  waiting: boolean
}) {
  const [page, setPage] = useState<{ url: string; opened: boolean } | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)

  useEffect(
    () =>
      window.api.on('mcp:auth-changed', (change) => {
        if (change.server !== name) return
        setPage(null)
        setError(change.error === null ? null : `Signing in failed: ${change.error}`)
        void window.api.invoke('settings:get').then((r) => {
          if (r.ok) useAppStore.setState({ settings: r.value })
        })
      }),
    [name],
  )

  const signIn = async (): Promise<void> => {
    setBusy(true)
    setError(null)
    const r = await window.api.invoke('mcp:sign-in', { name })
    setBusy(false)
    if (!r.ok) return setError(r.error)
    setPage(r.value.url === null ? null : { url: r.value.url, opened: r.value.opened })
  }
  const signOut = async (): Promise<void> => {
    const r = await window.api.invoke('mcp:sign-out', { name })
    if (r.ok) useAppStore.setState({ settings: r.value })
    setError(r.ok ? null : r.error)
  }

  return (
    <div className="muted small" data-testid="settings-mcp-auth" data-signed-in={auth.signedIn}>
      {auth.signedIn ? (
        <>
          {auth.account
            ? `Signed in as ${auth.account}`
            : `Signed in${auth.issuer ? ` at ${auth.issuer}` : ''}`}{' '}
          <button
            type="button"
            className="link-button"
            data-testid="settings-mcp-sign-out"
            onClick={() => void signOut()}
          >
            Sign out
          </button>
        </>
      ) : (
        <>
          {waiting ? 'Needs sign-in: its tools are off until you sign in. ' : 'Not signed in. '}
          <button
            type="button"
            className="link-button"
            data-testid="settings-mcp-sign-in"
            disabled={busy}
            onClick={() => void signIn()}
          >
            Sign in
          </button>
        </>
      )}
      {page &&
        (page.opened ? (
          <div data-testid="settings-mcp-sign-in-page">Finish signing in in your browser.</div>
        ) : (
          <div data-testid="settings-mcp-sign-in-page">
            Open this address to sign in (it comes back to this computer when you are done):{' '}
            <a href={page.url} target="_blank" rel="noreferrer" className="mono">
              {page.url}
            </a>
          </div>
        ))}
      {error && (
        <div className="error-text" role="alert">
          {error}
        </div>
      )}
    </div>
  )
}
