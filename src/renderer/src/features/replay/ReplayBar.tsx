import { useEffect } from 'react'
import { useShallow } from 'zustand/react/shallow'
import type { SessionEvent } from '../../../../shared/events'
import type { SessionState } from '../../../../shared/reducer'
import type { EventTimeline } from '../../lib/event-timeline'
import { formatOffset } from '../../lib/format'
import { useAppStore, type ReplaySpeed } from '../../store/app-store'
import { buildTimeAxis, displayTime, realTime, type TimeAxis } from '../timeline/scale'
import { Button } from '../../components/Button'

/**
 * Replay controls: play/pause at 1x, 4x, 16x or instantly, a scrubber over the session's time, and jumps to the
 * next tool call or approval. The timeline and transcript show the state at the replay position, computed by the
 * same reducer as the live view (EventTimeline: incremental forward, checkpoints backward).
 */

const SPEEDS: ReplaySpeed[] = [1, 4, 16, 'instant']

const isCallStart = (e: SessionEvent): boolean => e.type === 'tool.queued' || e.type === 'tool.started'
const isApproval = (e: SessionEvent): boolean => e.type === 'approval.requested'

/** The "next ..." buttons: each jumps to the next event it matches, and is disabled in replay when none is left. */
const JUMPS = [
  {
    testId: 'replay-next-call',
    label: 'Next call',
    title: 'Jump to the next tool call',
    matches: isCallStart,
  },
  {
    testId: 'replay-next-approval',
    label: 'Next approval',
    title: 'Jump to the next approval',
    matches: isApproval,
  },
]

/**
 * Playback runs on the timeline's own axis (timeline/scale.ts): time with calls running plays as it was, idle
 * and retry time is shortened as the timeline draws it, and a wait for the user is shortened less. So 1x shows
 * the work at its real pace, and 80 s of connection retries take under a second.
 */
const axes = new WeakMap<SessionState, TimeAxis>()
function playbackAxis(timeline: EventTimeline): TimeAxis {
  const head = timeline.head
  let axis = axes.get(head)
  if (!axis) axes.set(head, (axis = buildTimeAxis(head, timeline.lastAt ?? 0)))
  return axis
}

/** Where playback is after `elapsedMs` of wall clock at `speed`, from real time `at`. */
export function advance(axis: TimeAxis, at: number, elapsedMs: number, speed: number): number {
  return realTime(axis, displayTime(axis, at) + elapsedMs * speed)
}

export function ReplayBar() {
  const { timeline, replay, setReplay, previewing } = useAppStore(
    useShallow((s) => ({
      timeline: s.timeline,
      replay: s.replay,
      setReplay: s.setReplay,
      previewing: s.previewing,
      version: s.version,
    })),
  )
  const first = timeline?.firstAt ?? 0
  const last = timeline?.lastAt ?? first
  const span = Math.max(0, last - first)

  // Playback: the position advances with the wall clock times the speed, one store update per frame.
  useEffect(() => {
    if (!replay.playing) return
    let previous = performance.now()
    let id = requestAnimationFrame(function tick(now) {
      const { replay: current, timeline: tl, setReplay: update } = useAppStore.getState()
      const end = tl?.lastAt ?? 0
      const speed = current.speed === 'instant' ? Number.POSITIVE_INFINITY : current.speed
      const at =
        tl && Number.isFinite(speed)
          ? Math.min(end, Math.max(current.at, advance(playbackAxis(tl), current.at, now - previous, speed)))
          : end
      previous = now
      update({ at, playing: at < end })
      if (at < end) id = requestAnimationFrame(tick)
    })
    return () => cancelAnimationFrame(id)
  }, [replay.playing])

  if (!timeline || timeline.length === 0) return null
  if (previewing)
    return (
      <div className="replay-bar" data-testid="replay-bar" role="status">
        <span className="muted small" data-testid="session-preview-note">
          Showing the latest turns; reading the rest of this session…
        </span>
      </div>
    )
  const position = replay.active ? replay.at : last

  const togglePlay = (): void => {
    if (replay.playing) return setReplay({ playing: false })
    const from = !replay.active || replay.at >= last ? first : replay.at
    setReplay({ active: true, playing: true, at: from })
  }
  const jump = (matches: (e: SessionEvent) => boolean): void => {
    const at = timeline.nextAfter(replay.active ? replay.at : first - 1, matches)
    if (at !== undefined) setReplay({ active: true, playing: false, at })
  }

  return (
    <div
      className={`replay-bar ${replay.active ? 'active' : ''}`}
      data-testid="replay-bar"
      role="group"
      aria-label="Replay"
    >
      {/* Says what these controls are, beside a live run too; in a replay, "Exit replay" says it. */}
      {!replay.active && (
        <span className="panel-title" aria-hidden="true">
          Replay
        </span>
      )}
      <Button
        look="icon"
        className="play"
        testId="replay-play"
        aria-label={replay.playing ? 'Pause replay' : 'Play replay'}
        title={replay.playing ? 'Pause' : 'Replay this session'}
        onClick={togglePlay}
        disabled={span === 0}
      >
        {replay.playing ? '❚❚' : '▶'}
      </Button>
      <div className="segmented small" role="group" aria-label="Replay speed">
        {SPEEDS.map((speed) => (
          <button
            key={speed}
            type="button"
            aria-pressed={replay.speed === speed}
            data-testid={`replay-speed-${speed}`}
            onClick={() =>
              speed === 'instant'
                ? setReplay({ speed, active: true, playing: false, at: last })
                : // Choosing a speed in a replay plays at it (after "Next call" too), from where it stands.
                  setReplay(replay.active && replay.at < last ? { speed, playing: true } : { speed })
            }
          >
            {speed === 'instant' ? 'Instant' : `${speed}×`}
          </button>
        ))}
      </div>
      <input
        type="range"
        className="scrubber"
        data-testid="replay-scrubber"
        aria-label="Replay position"
        aria-valuetext={`${formatOffset(position - first)} of ${formatOffset(span)}`}
        min={0}
        max={span}
        step={1}
        value={Math.round(position - first)}
        onChange={(e) =>
          setReplay({ active: true, playing: false, at: first + Number(e.target.value) }, 'scrub')
        }
        disabled={span === 0}
      />
      <span className="replay-time mono" data-testid="replay-time">
        {formatOffset(position - first)} / {formatOffset(span)}
      </span>
      {JUMPS.map(({ testId, label, title, matches }) => (
        <Button
          look="small"
          key={testId}
          testId={testId}
          onClick={() => jump(matches)}
          disabled={replay.active && timeline.nextAfter(replay.at, matches) === undefined}
          title={title}
        >
          {label}
        </Button>
      ))}
      {replay.active && (
        <Button
          look="small-primary"
          testId="replay-exit"
          onClick={() => setReplay({ active: false, playing: false })}
        >
          Exit replay
        </Button>
      )}
    </div>
  )
}
