"""Live updates, all of them: what pages hear while a run streams and a verification advances.

- `events`: the Channels groups pages join (a run, a kernel, a leaderboard) and the payloads sent;
- `broadcast`: how synchronous code sends to a group (`group_send`, and `stream_to_group` for a
  run's many deltas);
- `progress`: an evaluation's stage changes, to the groups it belongs to;
- `layers`: the in-process channel layer of embedded mode (production uses Redis Pub/Sub).

The receiving end is each app's consumers (court.consumers, inference.consumers).
"""
