import type { MessageBoxOptions, WebContents } from 'electron'

/**
 * App-wide hardening for every web contents Electron creates (the window, a devtools front end, anything a
 * bug or a compromised page might open): no navigation away from the app, no new windows, no <webview>, and
 * in a packaged build no DevTools. Attached from `app.on('web-contents-created')`, so no contents escapes it.
 * Electron-free at run time (types only), so it is unit-tested without an Electron binary.
 */

/** The parts of WebContents the guard uses. */
export type GuardedContents = Pick<WebContents, 'on' | 'setWindowOpenHandler' | 'closeDevTools'>

export interface GuardOptions {
  /** The app's own page: the only document a contents may navigate to. */
  appUrl: string
  /** A packaged build: DevTools are closed as soon as anything opens them. */
  packaged: boolean
  /** Opens an http(s) link in the user's browser. */
  openExternal(url: string): void
}

export function guardWebContents(contents: GuardedContents, opts: GuardOptions): void {
  const stay = (event: { preventDefault(): void }, url: string): void => {
    if (!sameDocument(url, opts.appUrl)) event.preventDefault()
  }
  contents.on('will-navigate', stay)
  contents.on('will-redirect', stay)
  contents.on('will-frame-navigate', (event) => stay(event, event.url))
  contents.setWindowOpenHandler(({ url }) => {
    if (isWebLink(url)) opts.openExternal(url)
    return { action: 'deny' }
  })
  contents.on('will-attach-webview', (event) => event.preventDefault())
  if (opts.packaged) contents.on('devtools-opened', () => contents.closeDevTools())
}

/** Links a user may follow in their browser; file:, javascript:, custom schemes and the rest are dropped. */
export function isWebLink(url: string): boolean {
  try {
    const parsed = new URL(url)
    return parsed.protocol === 'https:' || parsed.protocol === 'http:'
  } catch {
    return false
  }
}

/** Same page of the same origin (a hash or query change is not leaving the app). */
export function sameDocument(url: string, expected: string): boolean {
  try {
    const a = new URL(url)
    const b = new URL(expected)
    return a.protocol === b.protocol && a.host === b.host && a.pathname === b.pathname
  } catch {
    return false
  }
}

/**
 * The main-process question before a stored API key goes to a new address. The renderer cannot answer it
 * (the dialog belongs to main), so a compromised page cannot quietly point the key at its own server.
 * "Keep the current address" is the default and the Escape answer.
 */
export function baseUrlConsentDialog(change: { from: string | null; to: string | null }): MessageBoxOptions {
  const to = change.to ?? 'the Anthropic API (the default address)'
  const from = change.from ?? 'the Anthropic API (the default address)'
  return {
    type: 'warning',
    title: 'Send your API key to a new address?',
    message: `Send your Claude API key to ${to}?`,
    detail:
      `Lanes sends your saved key with every request, so whoever runs ${to} will be able to use it. ` +
      `Until now it went to ${from}. Only agree if you set this address up yourself or trust it.`,
    buttons: ['Keep the current address', 'Send my key there'],
    defaultId: 0,
    cancelId: 0,
    noLink: true,
  }
}

/** The dialog's answer: only the explicit second button agrees. */
export function consentGiven(response: number): boolean {
  return response === 1
}
