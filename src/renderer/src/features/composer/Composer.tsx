import { useState, type KeyboardEvent } from 'react'
import { useShallow } from 'zustand/react/shallow'
import { useAppStore } from '../../store/app-store'
import { rewoundToTurn } from '../rewind/rewind-summary'
import { Button } from '../../components/Button'

/** Where the task is typed. Enter sends, Shift+Enter adds a line; while a run goes on, Stop ends it. */
export function Composer() {
  const { status, rewound, live, hasSession, hasWorkspace, busy, startTask, stopRun, replayActive } =
    useAppStore(
      useShallow((s) => ({
        status: s.timeline?.head.status,
        rewound: s.timeline ? rewoundToTurn(s.timeline.head) !== undefined : false,
        live: s.live,
        hasSession: s.openSessionId !== null,
        hasWorkspace: s.workspace !== null,
        busy: s.busy,
        startTask: s.startTask,
        stopRun: s.stopRun,
        replayActive: s.replay.active,
      })),
    )
  const [task, setTask] = useState('')
  const running = status === 'running'
  const paused = status === 'paused'
  const canSend = hasWorkspace && !running && !paused && !busy && task.trim() !== ''

  const send = (): void => {
    if (!canSend) return
    const text = task.trim()
    void startTask(text).then((ok) => {
      if (ok) setTask('')
    })
  }
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>): void => {
    // Esc leaves the field, so keys work for the rest of the window again (the review's A/R, J/K).
    if (event.key === 'Escape') event.currentTarget.blur()
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault()
      send()
    }
  }

  const placeholder = !hasWorkspace
    ? 'Open a project folder first'
    : running
      ? 'The agent is working… you can stop it'
      : paused
        ? rewound
          ? 'Rewound: continue the run (above) to go on from there'
          : 'Review the pending changes above to continue'
        : hasSession
          ? 'Give a follow-up task in this session (Enter to send, Shift+Enter for a new line)'
          : 'What should the agent do? (Enter to send, Shift+Enter for a new line)'

  return (
    <form
      className={`composer ${replayActive ? 'dimmed' : ''}`}
      onSubmit={(e) => {
        e.preventDefault()
        send()
      }}
    >
      <textarea
        className="composer-input"
        data-testid="composer-input"
        aria-label="Task for the agent"
        placeholder={placeholder}
        value={task}
        // While a review waits, nothing can be sent: one line leaves the review the room.
        rows={Math.min(8, Math.max(paused && task === '' ? 1 : 2, task.split('\n').length))}
        disabled={!hasWorkspace}
        onChange={(e) => setTask(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <div className="composer-actions">
        {running || (paused && live) ? (
          <Button className="danger" testId="run-stop" onClick={() => void stopRun()}>
            ■ Stop
          </Button>
        ) : (
          <Button look="primary" type="submit" testId="composer-send" disabled={!canSend}>
            Send
          </Button>
        )}
      </div>
    </form>
  )
}
