import { describe, expect, it } from 'vitest';
import { controlNotice } from '../src/control';

describe('controlNotice', () => {
  it('words the real server frames for people', () => {
    // The exact frame tomo-server sends for a refused switch_profile.
    const refused = controlNotice({
      type: 'error',
      code: 'invalid_op',
      message: 'profile `../x.toml` is not a .toml file inside the profiles directory',
      recoverable: true,
    });
    expect(refused.text).toBe('The server refused that: profile `../x.toml` is not a .toml file inside the profiles directory');
    expect(controlNotice({ type: 'replay_gap', missed_from: 3, missed_to: 9 }).text).toMatch(/Events 3–9 were missed/);
    expect(controlNotice({ type: 'session_reset', latest_seq: 4 }).text).toMatch(/restarted/);
  });

  it('still shows frames it does not know', () => {
    expect(controlNotice({ type: 'slow_down', message: 'too fast' }).text).toBe('Server: slow down: too fast');
  });
});
