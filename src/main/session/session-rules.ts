import { reduceEvents } from '../../shared/reducer'
import { openSessionWriter, readSession, sessionPaths } from './log'

/**
 * Revokes a session rule of a session no run of this process drives: under the log's lock (a run starting
 * meanwhile waits, or this is refused while another process holds it), the rule is looked up in the log as the
 * reducer reads it, and `rule.revoked` appended and made durable. False when the rule is not in force.
 */
export async function appendRevocation(
  sessionsDir: string,
  sessionId: string,
  ruleId: string,
): Promise<boolean> {
  const writer = await openSessionWriter(sessionsDir, sessionId, { create: false })
  try {
    const { events } = await readSession(sessionPaths(sessionsDir, sessionId).log)
    if (!reduceEvents(events).sessionRules.some((g) => g.ruleId === ruleId)) return false
    await writer.append({ type: 'rule.revoked', ruleId })
    await writer.sync()
    return true
  } finally {
    await writer.close()
  }
}
