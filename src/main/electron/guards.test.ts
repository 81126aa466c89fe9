import { describe, expect, it } from 'vitest'
import {
  baseUrlConsentDialog,
  consentGiven,
  guardWebContents,
  isWebLink,
  type GuardedContents,
} from './guards'

/** A web contents that records its listeners, so the guard's decisions can be played (no Electron here). */
function fakeContents() {
  const listeners = new Map<string, ((...args: unknown[]) => void)[]>()
  let openHandler: ((details: { url: string }) => { action: string }) | null = null
  let devToolsClosed = 0
  const contents = {
    on(name: string, listener: (...args: unknown[]) => void) {
      listeners.set(name, [...(listeners.get(name) ?? []), listener])
      return contents
    },
    setWindowOpenHandler(handler: (details: { url: string }) => { action: string }) {
      openHandler = handler
    },
    closeDevTools() {
      devToolsClosed++
    },
  }
  const fire = (name: string, ...args: unknown[]) => {
    for (const listener of listeners.get(name) ?? []) listener(...args)
  }
  /** Plays a navigation-like event and says whether the guard stopped it. */
  const blocked = (name: string, url: string): boolean => {
    let prevented = false
    const event = { url, preventDefault: () => (prevented = true) }
    fire(name, event, url)
    return prevented
  }
  return {
    contents: contents as unknown as GuardedContents,
    fire,
    blocked,
    open: (url: string) => openHandler!({ url }),
    devToolsClosed: () => devToolsClosed,
  }
}

const appUrl = 'file:///opt/lanes/out/renderer/index.html'

describe('the app-wide web contents guard', () => {
  it('keeps every contents on the app page: navigation, redirects and frame navigation elsewhere are stopped', () => {
    const c = fakeContents()
    guardWebContents(c.contents, { appUrl, packaged: true, openExternal: () => undefined })
    for (const event of ['will-navigate', 'will-redirect', 'will-frame-navigate']) {
      expect(c.blocked(event, 'https://evil.example/'), event).toBe(true)
      expect(c.blocked(event, 'file:///etc/passwd'), event).toBe(true)
      expect(c.blocked(event, 'not a url'), event).toBe(true)
      // The app's own page (a query or hash change) is not leaving it.
      expect(c.blocked(event, `${appUrl}#/session`), event).toBe(false)
    }
  })

  it('denies every new window and opens only http(s) links in the browser', () => {
    const opened: string[] = []
    const c = fakeContents()
    guardWebContents(c.contents, { appUrl, packaged: false, openExternal: (url) => opened.push(url) })
    for (const url of [
      'https://docs.anthropic.com/',
      'http://localhost:3000/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'smb://host/share',
    ]) {
      expect(c.open(url)).toEqual({ action: 'deny' })
    }
    expect(opened).toEqual(['https://docs.anthropic.com/', 'http://localhost:3000/'])
  })

  it('refuses <webview>', () => {
    const c = fakeContents()
    guardWebContents(c.contents, { appUrl, packaged: false, openExternal: () => undefined })
    expect(c.blocked('will-attach-webview', 'https://evil.example/')).toBe(true)
  })

  it('closes DevTools at once in a packaged build, and leaves them to developers otherwise', () => {
    const packaged = fakeContents()
    guardWebContents(packaged.contents, { appUrl, packaged: true, openExternal: () => undefined })
    packaged.fire('devtools-opened')
    expect(packaged.devToolsClosed()).toBe(1)
    const dev = fakeContents()
    guardWebContents(dev.contents, { appUrl, packaged: false, openExternal: () => undefined })
    dev.fire('devtools-opened')
    expect(dev.devToolsClosed()).toBe(0)
  })

  it('tells web links from the rest', () => {
    expect(isWebLink('https://x.example/a')).toBe(true)
    expect(isWebLink('HTTP://x.example')).toBe(true)
    expect(isWebLink('file:///x')).toBe(false)
    expect(isWebLink('mailto:a@b.c')).toBe(false)
    expect(isWebLink('')).toBe(false)
  })
})

describe('the base URL consent dialog', () => {
  it('names the new address and keeps the current one unless the second button is pressed', () => {
    const options = baseUrlConsentDialog({ from: null, to: 'https://proxy.example/v1' })
    expect(options.message).toContain('https://proxy.example/v1')
    expect(options.detail).toContain('the Anthropic API')
    expect(options.buttons).toEqual(['Keep the current address', 'Send my key there'])
    // Enter and Escape both keep the key where it was.
    expect(options.defaultId).toBe(0)
    expect(options.cancelId).toBe(0)
    expect(consentGiven(0)).toBe(false)
    expect(consentGiven(1)).toBe(true)
    expect(consentGiven(-1)).toBe(false)
  })

  it('describes a return to the default address', () => {
    const options = baseUrlConsentDialog({ from: 'https://proxy.example', to: null })
    expect(options.message).toContain('the Anthropic API (the default address)')
    expect(options.detail).toContain('https://proxy.example')
  })
})
