import type { AppInfo } from '../../../../shared/ipc'
import { Checkbox } from '../../components/Checkbox'

/**
 * The review's two per-command switches for bash (DESIGN 2.3), both off unless the user turns them on:
 * "needs the internet" keeps the sandbox but gives it the network; "run outside the sandbox" runs the command
 * with the user's own rights. Each says in one plain line what it allows. Without a sandbox on this machine
 * there is nothing to switch: the review says so, and how to get one.
 */

export interface SandboxChoice {
  network: boolean
  outsideSandbox: boolean
  /** "Show me its changes before they land" (only where they are captured on the copy-on-write layer). */
  hold?: boolean
}

export const SANDBOX_DEFAULT: SandboxChoice = { network: false, outsideSandbox: false, hold: false }

interface Props {
  sandbox: AppInfo['sandbox'] | undefined
  capture: AppInfo['capture'] | undefined
  value: SandboxChoice
  onChange(next: SandboxChoice): void
}

export function SandboxSwitches({ sandbox, capture, value, onChange }: Props) {
  // Where its changes cannot be captured, the review says so before the command runs (issue 20).
  const notCaptured = capture?.mode === 'scan' && (
    <p className="sandbox-note warning-line small" role="note" data-testid="capture-unavailable">
      What this command changes will be reported but cannot be undone: {capture.reason}
    </p>
  )
  if (sandbox && !sandbox.available)
    return (
      <>
        <p className="sandbox-note warning-line" data-testid="sandbox-unavailable">
          {sandbox.reason}
        </p>
        {notCaptured}
      </>
    )
  const set = (switchName: keyof SandboxChoice) => (checked: boolean) =>
    onChange({ ...value, [switchName]: checked })
  return (
    <div className="sandbox-switches" data-testid="sandbox-switches">
      {notCaptured}
      <Checkbox
        testId="approval-network"
        checked={value.network}
        disabled={value.outsideSandbox}
        onChange={set('network')}
      >
        Needs the internet
      </Checkbox>
      {value.network && !value.outsideSandbox && (
        <p className="warning-line small" role="note">
          It can send what it reads in this folder to any server.
        </p>
      )}
      {capture?.mode === 'overlay' && !value.outsideSandbox && (
        <Checkbox testId="approval-hold" checked={value.hold === true} onChange={set('hold')}>
          Show me its changes before they land
        </Checkbox>
      )}
      <Checkbox
        testId="approval-outside-sandbox"
        checked={value.outsideSandbox}
        onChange={set('outsideSandbox')}
      >
        Run outside the sandbox
      </Checkbox>
      {value.outsideSandbox && (
        <p className="warning-line small" role="note">
          It runs with all your rights: it can read, change or send any of your files, secrets included.
          {capture?.mode === 'overlay' &&
            ' What it changes is only found by comparing the folder before and after: it cannot be undone.'}
        </p>
      )}
    </div>
  )
}
