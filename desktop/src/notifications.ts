/**
 * Which daemon events raise an OS notification and what it says. Only a new inbound
 * message; never one from a muted sender (the daemon marks those), and never the
 * message's text: a notification can show on a locked screen, so it names the sender only.
 */
import type { ArchivedMessage, DaemonEvent } from '@svc/daemon/client';

export interface NotificationText {
  title: string;
  body: string;
}

export function notificationFor(event: DaemonEvent): NotificationText | undefined {
  if (event.type === 'peer_key_changed') {
    return {
      title: `The key of ${event.peer} changed`,
      body: 'Open svc to check it; messages are held until you accept.',
    };
  }
  if (event.type !== 'message') return undefined;
  const m = event.message;
  if (m.direction !== 'inbound' || m.muted) return undefined;
  return { title: `New message from ${m.from}`, body: `To ${event.agent}. Open svc to read it.` };
}

/** Unacknowledged inbound messages that are not muted: what the tray counts. */
export function unreadCount(inboxes: ReadonlyArray<readonly ArchivedMessage[]>): number {
  let n = 0;
  for (const inbox of inboxes) for (const m of inbox) if (m.direction === 'inbound' && !m.acked_at && !m.muted) n++;
  return n;
}

/** The tray while the daemon does not answer: no count, since the last one may be stale. */
export const TRAY_DAEMON_DOWN = 'svc: daemon not running';

export function trayLabel(unread: number): string {
  return unread === 0 ? 'svc: no unread messages' : `svc: ${unread} unread ${unread === 1 ? 'message' : 'messages'}`;
}
