/**
 * What every bash command's environment gets, sandboxed or not (one home for both commandEnv and
 * sandboxEnv): settings that keep tools from waiting for a person (no pager, no editor, no git prompt, CI
 * mode: no watch modes, npx does not ask) and a dumb terminal without colour (colour is stripped for the
 * model and shown inert in the UI, so it only costs bytes).
 */
export const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = {
  TERM: 'dumb',
  NO_COLOR: '1',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_EDITOR: 'true',
  GIT_TERMINAL_PROMPT: '0',
  CI: '1',
  PIP_NO_INPUT: '1',
  DEBIAN_FRONTEND: 'noninteractive',
}

/**
 * Output is decoded as UTF-8; a GUI-launched app may have no locale at all, and programs then print '?'.
 * Sets LANG in `env` only when no locale variable is there.
 */
export function ensureUtf8Locale(env: Record<string, string>): void {
  if (!env.LC_ALL && !env.LC_CTYPE && !env.LANG) env.LANG = 'C.UTF-8'
}
