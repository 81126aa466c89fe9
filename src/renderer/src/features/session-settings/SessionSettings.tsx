import { useState } from 'react'
import { useShallow } from 'zustand/react/shallow'
import { describeSessionRule } from '../../../../shared/events'
import { useAppStore } from '../../store/app-store'
import { Button } from '../../components/Button'
import './session-settings.css'

/**
 * The session's own settings, opened from its header (issue 21 §3): the "allow for the rest of this session"
 * rules in force, each revocable. What it lists is the reducer's `sessionRules`, so a replay shows the rules as
 * they were at its position (and nothing can be revoked there).
 */
export function SessionSettings() {
  const { sessionId, rules, replayActive } = useAppStore(
    useShallow((s) => ({
      sessionId: s.openSessionId,
      rules: s.view?.sessionRules ?? [],
      replayActive: s.replay.active,
    })),
  )
  const [open, setOpen] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [revoking, setRevoking] = useState<string | null>(null)
  if (!sessionId) return null

  const revoke = async (ruleId: string): Promise<void> => {
    setRevoking(ruleId)
    setError(null)
    const result = await window.api.invoke('session:revoke-rule', { sessionId, ruleId })
    setRevoking(null)
    if (!result.ok) return setError(result.error)
    // A live session streams its rule.revoked; one no run holds shows it once reloaded from its log.
    if (!result.value.live) await useAppStore.getState().reloadSession()
  }

  return (
    <span className="session-settings">
      <Button look="small" testId="session-settings-open" aria-expanded={open} onClick={() => setOpen(!open)}>
        Session settings{rules.length > 0 ? ` (${rules.length})` : ''}
      </Button>
      {open && (
        <section
          className="session-settings-panel"
          data-testid="session-settings"
          aria-label="Session settings"
        >
          <h2 className="small">Allowed for the rest of this session</h2>
          {rules.length === 0 ? (
            <p className="muted small" data-testid="session-rules-empty">
              Nothing: every change, command and tool call that needs a review asks. Tick “Allow for the rest
              of this session” in a review to add a rule here. Protected files always ask.
            </p>
          ) : (
            <ul className="session-rules">
              {rules.map((g) => (
                <li key={g.ruleId} data-testid="session-rule" data-rule-kind={g.rule.kind}>
                  <span>{describeSessionRule(g.rule)}</span>
                  <Button
                    look="small"
                    className="danger-outline"
                    testId="session-rule-revoke"
                    disabled={replayActive || revoking !== null}
                    title={replayActive ? 'Leave the replay to change the session' : undefined}
                    onClick={() => void revoke(g.ruleId)}
                  >
                    Revoke
                  </Button>
                </li>
              ))}
            </ul>
          )}
          {error && (
            <p className="error small" role="alert">
              {error}
            </p>
          )}
        </section>
      )}
    </span>
  )
}
