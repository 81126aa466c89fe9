import { describe, expect, it } from 'vitest'
import { browserLaunch } from './open-browser'

const url = 'http://127.0.0.1:4321/?token=abc&x=1'

describe('opening the browser for lanes web --open', () => {
  it('uses the platform opener with the URL as one argument', () => {
    expect(browserLaunch(url, { DISPLAY: ':0' }, 'linux')).toEqual({ command: 'xdg-open', args: [url] })
    expect(browserLaunch(url, { WAYLAND_DISPLAY: 'wayland-0' }, 'linux')).toEqual({
      command: 'xdg-open',
      args: [url],
    })
    expect(browserLaunch(url, {}, 'darwin')).toEqual({ command: 'open', args: [url] })
    expect(browserLaunch(url, {}, 'win32')).toEqual({
      command: 'rundll32',
      args: ['url.dll,FileProtocolHandler', url],
    })
  })

  it('does not try without a display, under CI or in a test run, and says why', () => {
    expect(browserLaunch(url, {}, 'linux')).toEqual({ skipped: expect.stringContaining('no display') })
    expect(browserLaunch(url, { CI: 'true', DISPLAY: ':0' }, 'linux')).toEqual({
      skipped: expect.stringContaining('CI'),
    })
    expect(browserLaunch(url, { VITEST: 'true' }, 'darwin')).toHaveProperty('skipped')
    expect(browserLaunch(url, { LANES_NO_BROWSER: '1' }, 'win32')).toHaveProperty('skipped')
  })
})
