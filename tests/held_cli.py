"""`bilateral` with one extra agent kind for tests that signal a running tournament: `held`.

`held` plays like `linear`. When BILATERAL_TEST_HOLD_AFTER=N is set, the games after the first N that `held` starts in
this process wait forever, so the run can never finish on its own: a test that kills or interrupts it is sure to find
it running, however fast or slow the machine is. Without the variable the command plays every game.

Two more holds, for Ctrl-C outside the playing phase: with BILATERAL_TEST_HOLD_CHECK=PATH, checking a `held` agent
(at start-up, before any file is written) creates PATH and waits forever; with BILATERAL_TEST_HOLD_LEADERBOARD=PATH,
computing the leaderboard after the games creates PATH and waits forever. A test waits for PATH, then signals."""
import asyncio, os, sys, time
from pathlib import Path
import bilateral.cli
from bilateral.agents import register_agent
from bilateral.strategies import TimeDependent
from bilateral.cli import main

HOLD_AFTER = int(os.environ.get('BILATERAL_TEST_HOLD_AFTER', '-1'))
started = [0]

class Held(TimeDependent):
    "Linear concession; blocks at the start of a game once the hold is reached."
    async def start(self, brief):
        await super().start(brief)
        started[0] += 1
        if 0 <= HOLD_AFTER < started[0]: await asyncio.Event().wait()

    def check(self):
        if os.environ.get('BILATERAL_TEST_HOLD_CHECK'): hold(os.environ['BILATERAL_TEST_HOLD_CHECK'])

def hold(path: str):
    "Say that the hold is reached (create `path`), then wait forever."
    Path(path).touch()
    while True: time.sleep(1)

if os.environ.get('BILATERAL_TEST_HOLD_LEADERBOARD'):
    bilateral.cli.leaderboard = lambda *a, **k: hold(os.environ['BILATERAL_TEST_HOLD_LEADERBOARD'])

register_agent('held', lambda arg: Held(1.0),
               'linear, but holds forever after BILATERAL_TEST_HOLD_AFTER games (tests only)')

if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
