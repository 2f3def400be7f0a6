import { describe, expect, it } from 'vitest';
import type { Event, EventEnvelope } from '../src/wire';
import { parseFrame } from '../src/wire';
import { approveOp, initialState, reduce, type UiState } from '../src/state';

function run(events: Event[]): UiState {
  return events.reduce<UiState>((s, e, i) => reduce(s, { seq: i + 1, ...e } as EventEnvelope), initialState());
}

describe('approvals', () => {
  it('shows a new command with its exact command line until the session settles it', () => {
    let s = run([
      {
        type: 'approval_requested',
        id: 1,
        request: {
          kind: 'run_command',
          plugin: 'notes',
          command: "npx -y notes-server --dir '/home/u/My Notes'",
          env: ['GITHUB_TOKEN'],
          manifest: '/home/u/plugins/notes/plugin.toml',
        },
      },
      {
        type: 'approval_requested',
        id: 2,
        request: { kind: 'tool_call', plugin: 'mailer', tool_name: 'send_mail', args: { to: 'bob' }, timeout_ms: 60000 },
      },
    ]);
    expect(s.approvals.map((a) => [a.id, a.kind])).toEqual([
      [1, 'run_command'],
      [2, 'tool_call'],
    ]);
    expect(s.approvals[0].title).toContain('Plugin "notes" wants to run a program');
    expect(s.approvals[0].detail).toBe("npx -y notes-server --dir '/home/u/My Notes' (given GITHUB_TOKEN)");
    expect(s.approvals[1].detail).toBe('{"to":"bob"}');
    // A replayed request (reconnect) is not shown twice.
    s = reduce(s, { seq: 9, type: 'approval_requested', id: 1, request: { kind: 'tool_call', plugin: 'x', tool_name: 'y', args: null, timeout_ms: 1 } });
    expect(s.approvals).toHaveLength(2);
    // Answered anywhere (another window, the terminal, a timeout): every client drops the prompt.
    s = reduce(s, { seq: 10, type: 'approval_resolved', id: 2, allowed: false });
    expect(s.approvals.map((a) => a.id)).toEqual([1]);
    // A new character keeps the open question (it is about the installation, not the character).
    s = reduce(s, { seq: 11, type: 'session_ready', character: 'Hana', agent_id: 'hana', tools: [] });
    expect(s.approvals.map((a) => a.id)).toEqual([1]);
  });

  it('answers with the approve op, and the events are known on the wire', () => {
    expect(approveOp(7, true)).toEqual({ type: 'approve', id: 7, allow: true });
    const frame = parseFrame('{"seq":3,"type":"approval_resolved","id":7,"allowed":true}');
    expect(frame?.kind).toBe('event');
  });
});
