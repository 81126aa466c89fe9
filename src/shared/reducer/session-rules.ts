import type { EventOf } from '../events'
import { anomaly, made, type Reduction } from './draft'

/** "Allow for the rest of this session" rules (issue 21 §3): rule.granted, rule.revoked. */

export function onRuleGranted(r: Reduction, event: EventOf<'rule.granted'>): void {
  const s = r.state
  if (s.sessionRules.some((g) => g.ruleId === event.ruleId))
    return anomaly(r, `rule ${event.ruleId} granted twice`)
  s.sessionRules = made(r, [
    ...s.sessionRules,
    {
      ruleId: event.ruleId,
      rule: event.rule,
      grantedAt: event.at,
      ...(event.callId !== undefined ? { callId: event.callId } : {}),
    },
  ])
}

export function onRuleRevoked(r: Reduction, event: EventOf<'rule.revoked'>): void {
  const s = r.state
  const kept = s.sessionRules.filter((g) => g.ruleId !== event.ruleId)
  if (kept.length === s.sessionRules.length)
    return anomaly(r, `rule ${event.ruleId} revoked but not in force`)
  s.sessionRules = made(r, kept)
}
