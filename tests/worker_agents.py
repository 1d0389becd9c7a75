"""An agent kind for the worker-process tests, `test-held`, declared through the `bilateral.agents` entry points
(test_workers.py writes the declaration), so that worker processes know it as well as the command's own process.

`test-held` plays like `linear`. Environment variables, read in each process, make it misbehave on purpose:
- BILATERAL_TEST_HOLD_AFTER=N: the games after the first N it starts in this process wait forever, so a run can never
  finish before the test kills or interrupts it, however fast or slow the machine is;
- BILATERAL_TEST_CRASH_FILE=PATH with BILATERAL_TEST_CRASH_AFTER=N: the first process to start its (N+1)-th game creates
  PATH and dies at once (exit code 70): exactly one worker crashes, the others go on;
- BILATERAL_TEST_FATAL_AFTER=N: after N games in this process, it fails as a refused key would (a fatal failure)."""
import asyncio, os
from bilateral.agents import register_agent
from bilateral.core import Unreachable
from bilateral.strategies import TimeDependent

started = [0]

def _crash_here(n: int) -> bool:
    "Whether this process is the one to crash now (the first to claim the crash file)."
    path = os.environ.get('BILATERAL_TEST_CRASH_FILE')
    if not path or n <= int(os.environ.get('BILATERAL_TEST_CRASH_AFTER', '0')): return False
    try: os.close(os.open(path, os.O_CREAT | os.O_EXCL))
    except FileExistsError: return False
    return True

class HeldLinear(TimeDependent):
    "Linear concession that holds, crashes or fails fatally when the environment says so."
    async def start(self, brief):
        await super().start(brief)
        started[0] += 1
        if _crash_here(started[0]): os._exit(70)
        if 0 <= int(os.environ.get('BILATERAL_TEST_FATAL_AFTER', '-1')) < started[0]:
            raise Unreachable('auth', 'the key was refused (test)', fatal=True)
        if 0 <= int(os.environ.get('BILATERAL_TEST_HOLD_AFTER', '-1')) < started[0]: await asyncio.Event().wait()

def held(arg): return HeldLinear(1.0)

register_agent('test-held', held, 'linear, but holds, crashes or fails on request (worker tests only)')
